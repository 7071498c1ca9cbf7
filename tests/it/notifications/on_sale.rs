//! The on-sale path: a run of registrations arriving (what a sale publishes) is applied at
//! once, and writes exactly what the same events applied one by one write.

use crate::identity::Ctx;
use crate::support::event_data;
use chrono::{Duration, Utc};
use domain::envelope::Envelope;
use domain::ids::TenantId;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use storage::broker::Handler;
use storage::inbox::Inbox;
use uuid::Uuid;

/// One world of the comparison: its own organization, events, people and registrations.
struct World {
    tenant: TenantId,
    event: Uuid,
    cancelled: Uuid,
    anna: Uuid,
    /// Anna's messenger chat, linked when she signed up.
    chat: i64,
    others: Uuid,
    registrations: Vec<Uuid>,
}

impl World {
    fn new() -> World {
        World::with(6)
    }

    /// A world of `registrations` registrations.
    fn with(registrations: usize) -> World {
        World {
            tenant: TenantId::new(),
            event: Uuid::now_v7(),
            cancelled: Uuid::now_v7(),
            anna: Uuid::now_v7(),
            chat: rand_chat(),
            others: Uuid::now_v7(),
            registrations: (0..registrations).map(|_| Uuid::now_v7()).collect(),
        }
    }

    fn envelope(&self, kind: &str, data: Value) -> Envelope {
        Envelope::new(kind, Some(self.tenant), None, event_data(kind, data))
    }

    /// Registration `i` (its door code `CODE-i`) in `event`, with `status`.
    fn registration(&self, kind: &str, i: usize, event: Uuid, status: &str) -> Envelope {
        let user = if i == 0 { self.anna } else { self.others };
        let expires = (status == "RESERVED").then(|| Utc::now() + Duration::minutes(30));
        self.envelope(
            kind,
            json!({"registrationId": self.registrations[i], "eventId": event, "userId": user,
                   "firstName": "Ann", "confirmationCode": format!("CODE-{i}"),
                   "status": status, "priceCents": 0, "currency": "RUB", "expiresAt": expires,
                   "event": {"eventId": event, "title": "Night", "slug": "night",
                             "startsAt": "2030-01-01T18:00:00Z", "timezone": "Europe/Moscow"}}),
        )
    }

    /// What happened before the run: Anna is known by her account's name, one event was
    /// cancelled, and registration 5 was confirmed (its ticket sent) before it was created.
    fn before(&self) -> Vec<Envelope> {
        vec![
            self.envelope(
                "user.registered",
                json!({"userId": self.anna, "firstName": "Anna", "lastName": "K",
                       "messengerId": self.chat.to_string()}),
            ),
            self.envelope(
                "event.cancelled",
                json!({"eventId": self.cancelled, "tenantId": self.tenant.as_uuid(),
                       "title": "Gone", "slug": "gone", "startsAt": "2030-01-01T18:00:00Z",
                       "timezone": "UTC"}),
            ),
            self.registration("registration.confirmed", 5, self.event, "CONFIRMED"),
        ]
    }

    /// The run: a free seat, a reservation, a seat awaiting confirmation, a payment's
    /// confirmation, a seat in the cancelled event, and the creation the confirmation overtook.
    fn run(&self) -> Vec<Envelope> {
        vec![
            self.registration("registration.created", 0, self.event, "CONFIRMED"),
            self.registration("registration.created", 1, self.event, "RESERVED"),
            self.registration("registration.created", 2, self.event, "PENDING"),
            self.registration("registration.confirmed", 3, self.event, "CONFIRMED"),
            self.registration("registration.created", 4, self.cancelled, "CONFIRMED"),
            self.registration("registration.created", 5, self.event, "CONFIRMED"),
        ]
    }

    /// Per registration of the run: whether it is active and its ticket went out, and the
    /// messages its event caused (kind, skip reason, whether it goes to a chat, code, text
    /// with this world's ids taken out; not its status, which the sender moves on).
    async fn written(&self, ctx: &Ctx, run: &[Envelope]) -> BTreeMap<usize, Value> {
        let db = ctx.t.owner().await;
        let mut written = BTreeMap::new();
        for (i, (registration, envelope)) in self.registrations.iter().zip(run).enumerate() {
            let participant = db
                .query_one(
                    "SELECT active, ticket_sent_at IS NOT NULL, first_name
                     FROM notification_service.participants WHERE registration_id = $1",
                    &[registration],
                )
                .await
                .unwrap();
            let messages: Vec<Value> = db
                .query(
                    "SELECT kind, chat_id IS NOT NULL, reason, ticket_code, text FROM notification_service.messages
                     WHERE source_event_id = $1 ORDER BY kind",
                    &[&envelope.id.as_uuid()],
                )
                .await
                .unwrap()
                .iter()
                .map(|m| {
                    let text: String = m.get(4);
                    json!([m.get::<_, String>(0), m.get::<_, bool>(1),
                           m.get::<_, Option<String>>(2), m.get::<_, Option<String>>(3),
                           text.replace(&self.event.to_string(), "EVENT")])
                })
                .collect();
            written.insert(
                i,
                json!({"active": participant.get::<_, bool>(0),
                       "ticketSent": participant.get::<_, bool>(1),
                       "firstName": participant.get::<_, String>(2),
                       "messages": messages}),
            );
        }
        written
    }
}

/// A chat id no other test uses.
fn rand_chat() -> i64 {
    (Uuid::now_v7().as_u128() % 1_000_000_000) as i64 + 7_000_000_000
}

#[tokio::test]
async fn a_run_of_arrivals_applied_at_once_writes_what_one_by_one_writes() {
    let ctx = Ctx::new().await;
    let inbox = Inbox::new(ctx.t.db.clone(), ctx.notifier());
    let (alone, together) = (World::new(), World::new());
    for world in [&alone, &together] {
        for e in world.before() {
            inbox.handle(&e).await.unwrap();
        }
    }
    let run_alone = alone.run();
    for e in &run_alone {
        inbox.handle(e).await.unwrap();
    }
    let run_together = together.run();
    inbox.handle_batch(&run_together).await.unwrap();
    // Delivered again, the run changes nothing.
    inbox.handle_batch(&run_together).await.unwrap();

    let written = together.written(&ctx, &run_together).await;
    assert_eq!(written, alone.written(&ctx, &run_alone).await);

    // And what it wrote is what each arrival asks for.
    let kinds = |i: usize| -> Vec<String> {
        written[&i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m[0].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(0), ["registration.confirmed"], "a free seat's ticket");
    let ticket = &written[&0]["messages"][0];
    assert_eq!(ticket[1], true, "Anna's ticket goes to her chat");
    assert_eq!(ticket[3], "CODE-0", "the ticket carries its code");
    assert!(
        ticket[4].as_str().unwrap().contains("Anna"),
        "the account's name wins: {ticket}"
    );
    assert_eq!(kinds(1), ["registration.reserved"]);
    assert_eq!(kinds(2), ["registration.pending"]);
    for held in [1, 2] {
        let message = &written[&held]["messages"][0];
        assert_eq!(message[3], Value::Null, "no code before payment");
        assert!(
            !message[4]
                .as_str()
                .unwrap()
                .contains(&format!("CODE-{held}"))
        );
    }
    assert!(
        written[&1]["messages"][0][4]
            .as_str()
            .unwrap()
            .contains("MSK"),
        "the reservation's deadline on the event's clock: {}",
        written[&1]["messages"][0][4]
    );
    assert_eq!(kinds(3), ["registration.confirmed"], "a payment's ticket");
    assert_eq!(
        kinds(4),
        Vec::<String>::new(),
        "no ticket for a cancelled event"
    );
    assert_eq!(written[&4]["ticketSent"], false);
    assert_eq!(kinds(5), Vec::<String>::new(), "its ticket went out before");
    for i in [0, 3, 5] {
        assert_eq!(written[&i]["ticketSent"], true, "{i}");
    }
    let tickets: i64 = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM notification_service.messages
             WHERE kind = 'registration.confirmed' AND ticket_code = 'CODE-5'
               AND user_id = $1",
            &[&together.others],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tickets, 1, "one ticket for registration 5");
}

#[tokio::test]
async fn a_chat_linked_through_the_bot_before_the_sign_up_was_applied_is_not_welcomed_again() {
    let ctx = Ctx::new().await;
    let inbox = Inbox::new(ctx.t.db.clone(), ctx.notifier());
    let tenant = TenantId::new();
    let (ann, bob) = (Uuid::now_v7(), Uuid::now_v7());
    let (ann_chat, bob_chat) = (rand_chat(), rand_chat() + 1);
    // Ann signed up by mail and linked her chat through /start (the bot's answer was her
    // welcome) before the notification service applied her sign-up.
    let tx = ctx.t.db.begin(storage::Scope::system()).await.unwrap();
    assert!(
        storage::notifications::projection::link_if_free(
            &tx,
            domain::ids::UserId(ann),
            ann_chat,
            Utc::now()
        )
        .await
        .unwrap()
    );
    tx.commit().await.unwrap();
    let signed_up = |user: Uuid, messenger: Option<i64>| {
        let kind = "user.registered";
        let data = json!({"userId": user, "firstName": "Ann", "lastName": "K",
                          "messengerId": messenger.map(|chat| chat.to_string())});
        Envelope::new(kind, Some(tenant), None, event_data(kind, data))
    };
    inbox.handle(&signed_up(ann, None)).await.unwrap();
    // Bob signed in with the messenger: his own chat is linked and welcomed.
    inbox.handle(&signed_up(bob, Some(bob_chat))).await.unwrap();

    let owner = ctx.t.owner().await;
    let welcomes: Vec<(Uuid, Option<i64>)> = owner
        .query(
            "SELECT user_id, chat_id FROM notification_service.messages
              WHERE kind = 'user.welcome' AND user_id = ANY($1) ORDER BY user_id",
            &[&vec![ann, bob]],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(welcomes, vec![(bob, Some(bob_chat))]);
}

/// Of the participants of `world`: how many, how many got their ticket, in how many
/// transactions or subtransactions they were written, and the tickets queued for its people.
async fn recorded(ctx: &Ctx, world: &World) -> (i64, i64, i64, i64) {
    let row = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE ticket_sent_at IS NOT NULL),
                    count(DISTINCT xmin::text),
                    (SELECT count(*) FROM notification_service.messages
                     WHERE kind = 'registration.confirmed' AND user_id = ANY($2))
             FROM notification_service.participants WHERE registration_id = ANY($1)",
            &[&world.registrations, &vec![world.anna, world.others]],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

#[tokio::test]
async fn a_backlog_of_arrivals_is_applied_hundreds_to_a_commit_and_one_named_twice_one_by_one() {
    let ctx = Ctx::new().await;
    let inbox = Inbox::new(ctx.t.db.clone(), ctx.notifier());
    // 300 seats sold: one run, one transaction (one-by-one runs stop at 64 events).
    let sale = World::with(300);
    let run: Vec<Envelope> = (0..300)
        .map(|i| sale.registration("registration.created", i, sale.event, "CONFIRMED"))
        .collect();
    inbox.handle_batch(&run).await.unwrap();
    assert_eq!(recorded(&ctx, &sale).await, (300, 300, 1, 300));

    // 150 seats and the confirmation of one of them in the same run: the set-based path
    // declines a registration named twice, and the run is applied one by one (64 events to
    // a transaction, each after a transaction's first under a savepoint); every seat still
    // gets exactly one ticket, and a redelivery adds nothing.
    let paid = World::with(150);
    let mut run: Vec<Envelope> = (0..150)
        .map(|i| paid.registration("registration.created", i, paid.event, "CONFIRMED"))
        .collect();
    run.insert(
        100,
        paid.registration("registration.confirmed", 7, paid.event, "CONFIRMED"),
    );
    inbox.handle_batch(&run).await.unwrap();
    let (participants, sent, _, tickets) = recorded(&ctx, &paid).await;
    assert_eq!((participants, sent, tickets), (150, 150, 150));
    inbox.handle_batch(&run).await.unwrap();
    let (participants, sent, _, tickets) = recorded(&ctx, &paid).await;
    assert_eq!(
        (participants, sent, tickets),
        (150, 150, 150),
        "redelivered"
    );
}
