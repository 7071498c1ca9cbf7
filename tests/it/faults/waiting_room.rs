//! A waiting room's places survive a kill -9 of the process that gave them: every place a
//! visitor was told of is there after the restart, with its turn, and no turn was given twice.
//! Two gateways and two events nodes, each a `bilet serve` of its own, let one line in at the
//! room's rate (both events nodes run an admitter), not twice it, go on at that rate when one
//! events node is killed, and an admission read through one gateway is honoured through the
//! other.

use super::{published_paid_event, serve};
use crate::scenario::cluster::spawn_node;
use crate::support::{TestDb, eventually, free_port};
use domain::events::waiting_room::RoomSettings;
use domain::ids::{TenantId, UserId};
use std::time::Duration;
use storage::events::waiting_room::rooms;

/// A published event of 1,000 free seats with its waiting room open since a minute ago at
/// `admit_per_minute`.
async fn event_with_room(
    t: &TestDb,
    admit_per_minute: i32,
) -> (
    TenantId,
    storage::events::catalog::Event,
    storage::events::ticket_types::TicketType,
) {
    let (tenant, organizer) = (TenantId::new(), UserId::new());
    let (event, ticket_type) = published_paid_event(t, tenant, organizer, 1000, 0, None).await;
    let now = chrono::Utc::now();
    let settings = RoomSettings {
        on_sale_at: now - chrono::Duration::minutes(1),
        admit_per_minute,
        admission_minutes: 10,
        grace_minutes: 5,
    };
    rooms::open(&t.db, tenant, organizer, event.id, settings, now)
        .await
        .unwrap();
    (tenant, event, ticket_type)
}

/// A visitor's access token, signed with the nodes' secret.
fn token(user: UserId) -> String {
    http::tokens::Tokens::new("test-secret-test-secret-test-secret")
        .issue(user, None, None, vec![], None, 0, chrono::Utc::now())
        .unwrap()
        .token
}

#[tokio::test]
async fn kill_9_mid_joins_keeps_every_place_given() {
    let t = TestDb::new().await;
    let (_, event, _) = event_with_room(&t, 1).await;

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let ready = || async {
        reqwest::get(format!("{base}/health/ready"))
            .await
            .is_ok_and(|r| r.status() == 200)
    };
    let mut first = Some(serve(&t, port));
    assert!(eventually(60, ready).await);

    let client = reqwest::Client::new();
    let queue = format!("{base}/api/v1/events/{}/queue", event.id);
    let mut joins = Vec::new();
    for i in 0..400 {
        // A steady stream over about two seconds, so the kill lands in the middle of it.
        if i % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if first.is_some() && placed(&t, event.id).await >= 60 {
                first = None; // SIGKILL in the middle of the joins
            }
        }
        let user = UserId::new();
        let (client, url, bearer) = (client.clone(), queue.clone(), token(user));
        joins.push(tokio::spawn(async move {
            let reply = client.post(url).bearer_auth(bearer).send().await.ok()?;
            if reply.status() != 201 {
                return None;
            }
            let body: serde_json::Value = reply.json().await.ok()?;
            Some((user, body["joinedAt"].as_str()?.to_string()))
        }));
    }
    assert!(
        first.is_none(),
        "the kill happened while visitors were joining"
    );
    let mut told = Vec::new();
    for join in joins {
        if let Ok(Some(place)) = join.await {
            told.push(place);
        }
    }
    assert!(!told.is_empty() && told.len() < 400, "{} told", told.len());

    let _second = serve(&t, port);
    assert!(eventually(60, ready).await);
    // Every visitor told of a place still holds it, as it was.
    for (user, joined_at) in &told {
        let reply = client
            .get(&queue)
            .bearer_auth(token(*user))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "{user:?}");
        let body: serde_json::Value = reply.json().await.unwrap();
        assert_eq!(
            body["joinedAt"].as_str(),
            Some(joined_at.as_str()),
            "{body}"
        );
    }
    // No turn given twice, and the counter is ahead of every turn given.
    let owner = t.owner().await;
    let row = owner
        .query_one(
            "SELECT count(*), count(DISTINCT ordinal), coalesce(max(ordinal), 0),
                (SELECT arrivals FROM event_service.waiting_rooms WHERE event_id = $1)
             FROM event_service.waiting_room_places WHERE event_id = $1",
            &[&event.id],
        )
        .await
        .unwrap();
    let (places, turns, last, arrivals): (i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    println!(
        "after kill -9: {} told, {places} places stored, last turn {last}, counter {arrivals}",
        told.len()
    );
    assert_eq!(places, turns, "no turn given twice");
    assert!(places >= told.len() as i64);
    assert!(
        arrivals >= last,
        "the counter survived with the places after it"
    );
}

#[tokio::test]
async fn two_gateways_and_two_events_nodes_admit_one_line_once_at_its_rate() {
    let t = TestDb::new().await;
    // 6,000 a minute: a hundred a second, over a line of 1,200 that lasts twelve seconds.
    let (tenant, event, ticket_type) = event_with_room(&t, 6_000).await;
    let line: Vec<uuid::Uuid> = (0..1_200).map(|_| uuid::Uuid::new_v4()).collect();
    let owner = t.owner().await;
    owner
        .execute(
            "INSERT INTO event_service.waiting_room_places (event_id, user_id, tenant_id, ordinal, early, joined_at)
             SELECT $1, u.user_id, $2, u.ordinal, false, now()
             FROM unnest($3::uuid[]) WITH ORDINALITY AS u(user_id, ordinal)",
            &[&event.id, &tenant.as_uuid(), &line],
        )
        .await
        .unwrap();
    // The admission clock starts as the nodes do: nothing owed for the minute before.
    owner
        .execute(
            "UPDATE event_service.waiting_rooms SET arrivals = $2, admitted_until = now() + interval '2 seconds'
             WHERE event_id = $1",
            &[&event.id, &(line.len() as i64)],
        )
        .await
        .unwrap();

    // Two gateways and two events nodes, each a process; every events node runs an admitter.
    let mut cluster = TwoByTwo::start(&t).await;
    // Over three seconds while the line is long, the room lets in what the rate owes, once.
    let admitted = || async {
        let row = t
            .owner()
            .await
            .query_one(
                "SELECT admitted_count, admitted_through, clock_timestamp()
                 FROM event_service.waiting_rooms WHERE event_id = $1",
                &[&event.id],
            )
            .await
            .unwrap();
        let at: chrono::DateTime<chrono::Utc> = row.get(2);
        (row.get::<_, i64>(0), row.get::<_, i64>(1), at)
    };
    assert!(eventually(30, || async { admitted().await.0 > 0 }).await);
    // Over three seconds while the line is long, the room lets in what the rate owes, once;
    // and again after one events node is killed, by the other alone.
    for phase in ["both events nodes", "events-2 alone"] {
        let (from, _, started) = admitted().await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (to, through, ended) = admitted().await;
        let owed = (ended - started).num_milliseconds() * 100 / 1_000;
        let given = to - from;
        println!(
            "{phase}: let in {given} in {} ms, {owed} owed",
            (ended - started).num_milliseconds()
        );
        // Each admitter runs four times a second: an admission is late by at most a run.
        assert!(
            (owed - 50..=owed + 50).contains(&given),
            "{phase}: {given} let in where the rate owes {owed}: twice it would be two admitters counting alone"
        );
        assert_eq!(through, to, "the cursor over as many places as were let in");
        cluster.kill("events-1");
    }

    // Everyone let in, each node honours the admission the other signed.
    assert!(eventually(60, || async { admitted().await.0 == line.len() as i64 }).await);
    let client = reqwest::Client::new();
    for (i, user) in line.iter().take(6).enumerate() {
        // Read through one gateway, registered through the other.
        let (read_at, register_at) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
        let (read_at, register_at) = (&cluster.gateways[read_at], &cluster.gateways[register_at]);
        let place: serde_json::Value = client
            .get(format!("{read_at}/api/v1/events/{}/queue", event.id))
            .bearer_auth(token(UserId(*user)))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(place["status"], "ADMITTED", "{place}");
        let admission = place["admission"].as_str().unwrap().to_string();
        let register = |bearer: String, admission: &str| {
            client
                .post(format!(
                    "{register_at}/api/v1/events/{}/registrations",
                    event.id
                ))
                .bearer_auth(bearer)
                .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
                .header("X-Admission", admission.to_string())
                .header("Accept-Language", "en")
                .json(&serde_json::json!({"ticketTypeId": ticket_type.id}))
                .send()
        };
        // Another account showing it is refused by the other node as well.
        let stolen = register(token(UserId::new()), &admission).await.unwrap();
        assert_eq!(stolen.status(), 403);
        let body: serde_json::Value = stolen.json().await.unwrap();
        assert_eq!(body["code"], "forbidden", "{body}");
        assert_eq!(
            body["message"], "This waiting-room admission was given to another account",
            "{body}"
        );
        let mine = register(token(UserId(*user)), &admission).await.unwrap();
        assert_eq!(mine.status(), 201, "{}", mine.text().await.unwrap());
    }
}

/// Two gateways and two events nodes on one database and broker, each its own `bilet serve`,
/// killed when dropped.
struct TwoByTwo {
    gateways: Vec<String>,
    processes: Vec<(&'static str, std::process::Child)>,
}

impl TwoByTwo {
    async fn start(t: &TestDb) -> TwoByTwo {
        let dir =
            std::env::temp_dir().join(format!("bilet-rooms-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut nodes = String::new();
        let mut urls = Vec::new();
        for (name, service) in [
            ("gateway-1", "gateway"),
            ("gateway-2", "gateway"),
            ("events-1", "events"),
            ("events-2", "events"),
        ] {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}");
            nodes.push_str(&format!(
                "[[nodes]]\nname = \"{name}\"\nservices = [\"{service}\"]\naddresses = {{ {service} = {{ listen = \"127.0.0.1:{port}\", url = \"{url}\" }} }}\n"
            ));
            urls.push((name, url));
        }
        let file = dir.join("cluster.toml");
        std::fs::write(
            &file,
            format!(
                r#"
data_dir = "{dir}"
[database]
url = "{db}"
[broker]
url = "{amqp}"
exchange = "bilet.test-{exchange}"
[auth]
jwt_secret = "test-secret-test-secret-test-secret"
service_secret = "test-service-secret-test-service-secret"
[gateway]
user_per_minute = 1000000
public_per_minute = 1000000
[cluster]
renew_every_ms = 300
lease_ttl_ms = 2000
map_poll_ms = 500
[services.gateway]
listen = "{gateway_listen}"
url = "{gateway}"
[services.events]
listen = "{events_listen}"
url = "{events}"
{nodes}
"#,
                dir = dir.display(),
                db = t.url,
                amqp = crate::support::amqp_url(),
                exchange = uuid::Uuid::now_v7().simple(),
                gateway_listen = urls[0].1.trim_start_matches("http://"),
                gateway = urls[0].1,
                events_listen = urls[2].1.trim_start_matches("http://"),
                events = urls[2].1,
            ),
        )
        .unwrap();
        let processes = urls
            .iter()
            .map(|(name, _)| (*name, spawn_node(&file, name)))
            .collect();
        let cluster = TwoByTwo {
            gateways: vec![urls[0].1.clone(), urls[1].1.clone()],
            processes,
        };
        for (_, url) in &urls {
            assert!(
                eventually(90, || async {
                    reqwest::get(format!("{url}/health/ready"))
                        .await
                        .is_ok_and(|r| r.status().is_success())
                })
                .await,
                "{url} becomes ready"
            );
        }
        cluster
    }
}

impl TwoByTwo {
    /// SIGKILL to the node `name` (once; later calls find it gone).
    fn kill(&mut self, name: &str) {
        for (_, child) in self.processes.iter_mut().filter(|(n, _)| *n == name) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TwoByTwo {
    fn drop(&mut self) {
        for (_, child) in &mut self.processes {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Places stored in the event's room.
async fn placed(t: &TestDb, event: uuid::Uuid) -> i64 {
    t.owner()
        .await
        .query_one(
            "SELECT count(*) FROM event_service.waiting_room_places WHERE event_id = $1",
            &[&event],
        )
        .await
        .unwrap()
        .get(0)
}
