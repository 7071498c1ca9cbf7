//! Gateway rate limits: fixed one-minute windows counted per client IP (public routes), per
//! user (authenticated routes) and per user for uploads. Counts live in memory, or in Redis
//! when several gateways must share one budget.

use async_trait::async_trait;
use domain::clock::Clock;
use domain::config::GatewayConfig;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Length of a window in seconds.
const WINDOW_SECONDS: i64 = 60;

/// What a request is counted against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bucket {
    /// An anonymous client, by IP.
    Public(IpAddr),
    /// A signed-in user.
    User(uuid::Uuid),
    /// Uploads of a signed-in user.
    Upload(uuid::Uuid),
    /// A payment provider's notifications, by source IP: bursts come exactly when seats sell.
    Webhook(IpAddr),
    /// Joins of waiting-room queues, by client IP: however many accounts one address holds.
    QueueJoinIp(IpAddr),
    /// Joins of waiting-room queues by one account.
    QueueJoinAccount(uuid::Uuid),
}

/// The verdict on one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether it may pass.
    pub allowed: bool,
    /// The limit of its bucket.
    pub limit: u32,
    /// Requests left in the window.
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset_after: u64,
}

/// Where counts are kept.
#[async_trait]
pub trait Counter: Send + Sync + 'static {
    /// Adds one to `key` in window `window` and returns the new count.
    async fn increment(&self, key: &str, window: i64) -> Result<u64, String>;

    /// Lets go of the counts of the windows before `window` (blocking: it frees them). A
    /// store whose keys expire on their own has nothing to do.
    fn forget_before(&self, _window: i64) {}
}

/// Counts in this process: the keys of the current window only, spread over shards so
/// requests of different clients rarely wait for one another. A new window starts with empty
/// maps and the old ones are dropped away from the request path, so a request costs the same
/// whether a window holds ten keys or millions.
pub struct MemoryCounter {
    shards: Box<[Mutex<Window>]>,
}

/// The counts of one shard for one window.
#[derive(Default)]
struct Window {
    number: i64,
    counts: HashMap<String, u64>,
}

/// Shards of the in-memory counter: enough that two cores (or sixty-four) seldom meet on one.
const SHARDS: usize = 64;

impl Default for MemoryCounter {
    fn default() -> Self {
        MemoryCounter {
            shards: (0..SHARDS).map(|_| Mutex::new(Window::default())).collect(),
        }
    }
}

impl MemoryCounter {
    /// Keys counted in `window` (for tests and metrics).
    pub fn keys_in(&self, window: i64) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let shard = shard.lock().unwrap_or_else(|p| p.into_inner());
                if shard.number == window {
                    shard.counts.len()
                } else {
                    0
                }
            })
            .sum()
    }

    fn shard(&self, key: &str) -> &Mutex<Window> {
        use std::hash::{Hash, Hasher};
        // A fixed hasher: the shard only spreads load, nothing depends on its secrecy.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        &self.shards[(hasher.finish() as usize) % self.shards.len()]
    }
}

#[async_trait]
impl Counter for MemoryCounter {
    async fn increment(&self, key: &str, window: i64) -> Result<u64, String> {
        let (count, ended) = {
            let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
            let mut ended = None;
            // A request of an earlier window arriving late counts in the current one.
            if window > shard.number {
                shard.number = window;
                ended = Some(std::mem::take(&mut shard.counts));
            }
            // The key is copied only the first time it is seen in a window.
            let count = if let Some(count) = shard.counts.get_mut(key) {
                *count += 1;
                *count
            } else {
                shard.counts.insert(key.to_string(), 1);
                1
            };
            (count, ended)
        };
        // Freeing a window's keys takes time in proportion to them: not under the lock, and
        // not on this request's task.
        if let Some(ended) = ended.filter(|m| !m.is_empty()) {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || drop(ended))),
                Err(_) => drop(ended),
            }
        }
        Ok(count)
    }

    fn forget_before(&self, window: i64) {
        let mut ended = Vec::new();
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            if shard.number < window {
                shard.number = window;
                ended.push(std::mem::take(&mut shard.counts));
            }
        }
        // Freed here, once every lock is released.
        drop(ended);
    }
}

/// Counts in Redis, shared by every gateway using the same prefix.
pub struct RedisCounter {
    connection: redis::aio::ConnectionManager,
    prefix: String,
}

impl RedisCounter {
    /// Connects to `url`.
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisCounter, String> {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let connection = client
            .get_connection_manager()
            .await
            .map_err(|e| e.to_string())?;
        Ok(RedisCounter {
            connection,
            prefix: prefix.to_string(),
        })
    }
}

#[async_trait]
impl Counter for RedisCounter {
    async fn increment(&self, key: &str, window: i64) -> Result<u64, String> {
        let key = format!("{}:{key}:{window}", self.prefix);
        let mut connection = self.connection.clone();
        let (count, _): (u64, bool) = redis::pipe()
            .atomic()
            .incr(&key, 1)
            .expire(&key, WINDOW_SECONDS * 2)
            .query_async(&mut connection)
            .await
            .map_err(|e| e.to_string())?;
        Ok(count)
    }
}

/// The limiter of a gateway.
pub struct RateLimiter {
    counter: Box<dyn Counter>,
    clock: Arc<dyn Clock>,
    public: u32,
    user: u32,
    upload: u32,
    webhook: u32,
    queue_join_ip: u32,
    queue_join_account: u32,
}

impl RateLimiter {
    /// A limiter with the configured limits over `counter`.
    pub fn new(
        counter: Box<dyn Counter>,
        clock: Arc<dyn Clock>,
        config: &GatewayConfig,
    ) -> RateLimiter {
        RateLimiter {
            counter,
            clock,
            public: config.public_per_minute,
            user: config.user_per_minute,
            upload: config.upload_per_minute,
            webhook: config.webhook_per_minute,
            queue_join_ip: config.queue_joins_per_ip_per_minute,
            queue_join_account: config.queue_joins_per_account_per_minute,
        }
    }

    /// Lets go of the counts of ended windows. Without it a window's keys stayed until a
    /// request of a later window reached their shard: after a sale, the last minute's users
    /// (90,000 in a 3,000-a-second sale, about 9 MB) were held for as long as the node was quiet.
    pub fn forget_ended(&self) {
        let window = self.clock.now().timestamp().div_euclid(WINDOW_SECONDS);
        self.counter.forget_before(window);
    }

    /// Counts one request; when the store fails the request passes (a broken Redis must not
    /// stop ticket sales) and the failure is logged.
    pub async fn check(&self, bucket: &Bucket) -> Decision {
        let (key, limit) = match bucket {
            Bucket::Public(ip) => (format!("ip:{}", client_key(*ip)), self.public),
            Bucket::User(user) => (format!("user:{user}"), self.user),
            Bucket::Upload(user) => (format!("upload:{user}"), self.upload),
            Bucket::Webhook(ip) => (format!("webhook:{}", client_key(*ip)), self.webhook),
            Bucket::QueueJoinIp(ip) => {
                (format!("queue-ip:{}", client_key(*ip)), self.queue_join_ip)
            }
            Bucket::QueueJoinAccount(user) => {
                (format!("queue-user:{user}"), self.queue_join_account)
            }
        };
        let now = self.clock.now().timestamp();
        let window = now.div_euclid(WINDOW_SECONDS);
        let reset_after = ((window + 1) * WINDOW_SECONDS - now).max(1) as u64;
        match self.counter.increment(&key, window).await {
            Ok(count) => Decision {
                allowed: count <= u64::from(limit),
                limit,
                remaining: u32::try_from(u64::from(limit).saturating_sub(count)).unwrap_or(0),
                reset_after,
            },
            Err(error) => {
                tracing::warn!(%error, "rate limit store unavailable; letting the request pass");
                Decision {
                    allowed: true,
                    limit,
                    remaining: limit,
                    reset_after,
                }
            }
        }
    }
}

/// Forgets each window's counts a second after it ends, off the async workers, for as long as
/// the limiter is used elsewhere.
pub async fn forget_ended_windows(limiter: std::sync::Weak<RateLimiter>) {
    loop {
        let Some(now) = limiter.upgrade().map(|l| l.clock.now().timestamp()) else {
            return;
        };
        let next = (now.div_euclid(WINDOW_SECONDS) + 1) * WINDOW_SECONDS;
        let wait = u64::try_from(next - now).unwrap_or(1) + 1;
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
        let Some(limiter) = limiter.upgrade() else {
            return;
        };
        let _ = tokio::task::spawn_blocking(move || limiter.forget_ended()).await;
    }
}

/// What an address is counted as: an IPv4 address itself, an IPv6 address by its /64 (one
/// subscriber usually holds a whole /64, so counting single addresses would give them 2^64
/// budgets).
pub fn client_key(ip: IpAddr) -> String {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            format!("{}/64", std::net::Ipv6Addr::from(prefix))
        }
    }
}

/// An IP address or CIDR range of trusted proxies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `10.0.0.0/8`, `::1` or `192.168.1.5`.
    pub fn parse(text: &str) -> Option<Network> {
        let (address, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a.parse::<IpAddr>().ok()?, p.parse::<u8>().ok()?),
            None => {
                let a = text.trim().parse::<IpAddr>().ok()?;
                (a, if a.is_ipv4() { 32 } else { 128 })
            }
        };
        let max = if address.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Network { address, prefix })
    }

    /// Whether `ip` is inside the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        fn bits(ip: IpAddr) -> (u128, u8) {
            match ip {
                IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
                IpAddr::V6(v6) => (u128::from(v6), 128),
            }
        }
        let (net, width) = bits(self.address);
        let (candidate, candidate_width) = bits(ip.to_canonical());
        if width != candidate_width {
            return false;
        }
        let shift = u32::from(width - self.prefix);
        if shift >= 128 {
            return true;
        }
        (net >> shift) == (candidate >> shift)
    }
}

/// The client's address: the peer, or — when the peer is a trusted proxy — the nearest
/// untrusted address in X-Forwarded-For.
pub fn client_ip(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Network]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    let hops: Vec<IpAddr> = header
        .split(',')
        .filter_map(|h| h.trim().parse().ok())
        .collect();
    hops.iter()
        .rev()
        .find(|ip| !is_trusted(**ip))
        .or(hops.first())
        .copied()
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::clock::ManualClock;

    #[tokio::test]
    async fn a_million_users_in_one_window_are_each_counted_and_the_next_window_starts_empty() {
        let counter = MemoryCounter::default();
        let users: Vec<String> = (0..1_000_000).map(|i| format!("user:{i:07}")).collect();
        for user in &users {
            assert_eq!(counter.increment(user, 7).await, Ok(1));
        }
        assert_eq!(counter.keys_in(7), 1_000_000);
        assert_eq!(counter.increment(&users[123_456], 7).await, Ok(2));
        assert_eq!(counter.increment(&users[999_999], 7).await, Ok(2));
        // A late request of the window before counts in the current one, not in a new map.
        assert_eq!(counter.increment(&users[0], 6).await, Ok(2));
        // The next window keeps none of the million: each user starts again at one.
        assert_eq!(counter.increment(&users[123_456], 8).await, Ok(1));
        for i in 0..10_000 {
            assert_eq!(counter.increment(&format!("user:new-{i}"), 8).await, Ok(1));
        }
        // Every shard has seen the new window by now and let the old one go.
        assert_eq!(counter.keys_in(8), 10_001);
        assert_eq!(counter.keys_in(7), 0);
    }

    #[tokio::test]
    async fn the_counts_of_an_ended_window_are_let_go_without_waiting_for_a_request() {
        let counter = MemoryCounter::default();
        for i in 0..1_000 {
            counter.increment(&format!("user:{i}"), 7).await.unwrap();
        }
        counter.forget_before(7);
        assert_eq!(counter.keys_in(7), 1_000, "the current window is kept");
        counter.forget_before(8);
        assert_eq!(counter.keys_in(7), 0);
        // A late request of the forgotten window counts in the current one, from one.
        assert_eq!(counter.increment("user:1", 7).await, Ok(1));
        assert_eq!(counter.keys_in(8), 1);
    }

    #[test]
    fn networks() {
        let n = Network::parse("10.0.0.0/8").unwrap();
        assert!(n.contains("10.1.2.3".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(
            Network::parse("::1")
                .unwrap()
                .contains("::1".parse().unwrap())
        );
        assert!(
            Network::parse("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
        assert!(Network::parse("10.0.0.0/33").is_none());
        assert!(Network::parse("nonsense").is_none());
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let trusted = vec![Network::parse("10.0.0.0/8").unwrap()];
        let proxy: IpAddr = "10.0.0.5".parse().unwrap();
        let stranger: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(
            client_ip(stranger, Some("1.2.3.4"), &trusted),
            stranger,
            "spoofed header ignored"
        );
        assert_eq!(
            client_ip(proxy, Some("1.2.3.4"), &trusted),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_ip(proxy, Some("6.6.6.6, 1.2.3.4, 10.0.0.7"), &trusted),
            "1.2.3.4".parse::<IpAddr>().unwrap(),
            "the nearest untrusted hop, not a client-supplied first entry"
        );
        assert_eq!(client_ip(proxy, None, &trusted), proxy);
    }

    #[test]
    fn ipv6_clients_count_per_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), "2001:db8:1:2::/64");
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(other));
        assert_eq!(client_key("::ffff:1.2.3.4".parse().unwrap()), "1.2.3.4");
        assert_eq!(client_key("1.2.3.4".parse().unwrap()), "1.2.3.4");
    }

    #[tokio::test]
    async fn windows_count_exactly_and_reset() {
        let clock = Arc::new(ManualClock::new(
            chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        ));
        let config = GatewayConfig {
            public_per_minute: 3,
            ..GatewayConfig::default()
        };
        let limiter = RateLimiter::new(Box::new(MemoryCounter::default()), clock.clone(), &config);
        let ip = Bucket::Public("1.2.3.4".parse().unwrap());
        for remaining in [2, 1, 0] {
            let d = limiter.check(&ip).await;
            assert!(d.allowed);
            assert_eq!(d.remaining, remaining);
        }
        let refused = limiter.check(&ip).await;
        assert!(!refused.allowed);
        assert_eq!(refused.reset_after, 60);
        assert!(
            limiter
                .check(&Bucket::Public("1.2.3.5".parse().unwrap()))
                .await
                .allowed,
            "per IP"
        );
        clock.advance(chrono::Duration::seconds(60));
        assert!(limiter.check(&ip).await.allowed, "a new window");
    }
}
