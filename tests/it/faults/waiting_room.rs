//! A waiting room's places survive a kill -9 of the process that gave them: every place a
//! visitor was told of is there after the restart, with its turn, and no turn was given twice.

use super::{published_paid_event, serve};
use crate::support::{TestDb, eventually};
use domain::events::waiting_room::RoomSettings;
use domain::ids::{TenantId, UserId};
use std::time::Duration;
use storage::events::waiting_room::rooms;

#[tokio::test]
async fn kill_9_mid_joins_keeps_every_place_given() {
    let t = TestDb::new().await;
    let (tenant, organizer) = (TenantId::new(), UserId::new());
    let (event, _) = published_paid_event(&t, tenant, organizer, 1000, 0, None).await;
    let now = chrono::Utc::now();
    let settings = RoomSettings {
        on_sale_at: now - chrono::Duration::minutes(1),
        admit_per_minute: 1,
        admission_minutes: 10,
        grace_minutes: 5,
    };
    rooms::open(&t.db, tenant, organizer, event.id, settings, now)
        .await
        .unwrap();

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

    let tokens = http::tokens::Tokens::new("test-secret-test-secret-test-secret");
    let token = |user: UserId| {
        tokens
            .issue(user, None, None, vec![], None, 0, chrono::Utc::now())
            .unwrap()
            .token
    };
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
