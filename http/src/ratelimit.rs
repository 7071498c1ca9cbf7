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
}

/// Counts in this process.
#[derive(Default)]
pub struct MemoryCounter(Mutex<HashMap<String, (i64, u64)>>);

#[async_trait]
impl Counter for MemoryCounter {
    async fn increment(&self, key: &str, window: i64) -> Result<u64, String> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Old windows are dropped as the map grows, so idle clients do not pile up.
        if map.len() > 100_000 {
            map.retain(|_, (w, _)| *w >= window);
        }
        let entry = map.entry(key.to_string()).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        entry.1 += 1;
        Ok(entry.1)
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
        }
    }

    /// Counts one request; when the store fails the request passes (a broken Redis must not
    /// stop ticket sales) and the failure is logged.
    pub async fn check(&self, bucket: &Bucket) -> Decision {
        let (key, limit) = match bucket {
            Bucket::Public(ip) => (format!("ip:{}", client_key(*ip)), self.public),
            Bucket::User(user) => (format!("user:{user}"), self.user),
            Bucket::Upload(user) => (format!("upload:{user}"), self.upload),
            Bucket::Webhook(ip) => (format!("webhook:{}", client_key(*ip)), self.webhook),
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
