//! Finding a person among an event's registrations: one event with 100,000 registrations (and
//! nothing else stored), then `GET /api/v1/events/{id}/registrations?search=` through the
//! gateway of one whole-platform `bilet serve`, as the organizer's page asks it (a page of 20,
//! with the total). Prints, per kind of search, how many it finds and the time to the answer
//! (p50, p95, max of 30 asks, one at a time), and the plan PostgreSQL chose.
//!
//! `cargo build --release -p bilet --bin bilet -p bench --bin search && target/release/search`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_search` is recreated).
//! REGISTRATIONS sets their number.

use bench::node::Node;
use bench::sale::{admin_url, bilet_bin, env_or, fresh_database, sales, token};
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use std::time::{Duration, Instant};
use uuid::Uuid;

const DATABASE: &str = "bilet_bench_search";
const ASKS: usize = 30;

/// Registrations of `$1` (tenant), `$2` (event), `$3` (ticket type), `$4` of them: names from
/// two short lists in Latin and Cyrillic letters, an email of each, a unique code.
const SEED: &str = r#"
INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, email,
                                         first_name, last_name, confirmation_code, status,
                                         price_cents, currency, created_at, updated_at)
SELECT gen_random_uuid(), $1, $2, $3, gen_random_uuid(),
       lower(f.name) || '.' || lower(l.name) || '.' || i || '@example.' || (ARRAY['com', 'org', 'ru'])[1 + i % 3],
       f.name, l.name, 'S' || upper(lpad(to_hex(i), 7, '0')), 'CONFIRMED', 0, 'RUB',
       now() - make_interval(secs => i), now() - make_interval(secs => i)
FROM generate_series(1, $4::int) AS i
JOIN LATERAL (SELECT (ARRAY['Ann', 'Boris', 'Clara', 'Dmitri', 'Elena', 'Fyodor', 'Galina', 'Igor',
                            'Анна', 'Борис', 'Вера', 'Григорий', 'Дарья', 'Евгений', 'Жанна', 'Зоя'])
                     [1 + i % 16] AS name) f ON true
JOIN LATERAL (SELECT (ARRAY['Smith', 'Ivanova', 'Petrov', 'Lee', 'Novak', 'Kim', 'Garcia', 'Müller',
                            'Смирнова', 'Кузнецов', 'Попова', 'Соколов', 'Лебедева', 'Козлов',
                            'Новикова', 'Морозов', 'Волкова', 'Соловьёв', 'Васильева', 'Зайцев'])
                     [1 + (i / 16) % 20] AS name) l ON true
"#;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let registrations = env_or("REGISTRATIONS", 100_000);
    let db_url = fresh_database(&admin_url(), DATABASE).await?;
    let client = reqwest::Client::new();
    let mut node = Node::start(&bilet_bin()?, &db_url, "search")?;
    node.ready(&client).await?;
    let made = sales(&client, &node.gateway, 1, 10, false).await?;
    let (event, ticket_type) = made.types[0];

    let (db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let tenant: Uuid = db
        .query_one(
            "SELECT tenant_id FROM event_service.events WHERE id = $1",
            &[&event],
        )
        .await?
        .get(0);
    let seeded = Instant::now();
    let count = i32::try_from(registrations)?;
    db.execute(SEED, &[&tenant, &event, &ticket_type, &count])
        .await?;
    db.batch_execute("ANALYZE event_service.registrations")
        .await?;
    println!(
        "{registrations} registrations of one event seeded in {:.1} s\n",
        seeded.elapsed().as_secs_f64()
    );

    let organizer = token(
        UserId::new(),
        Some(TenantId::from(tenant)),
        vec![Role::Owner],
    )?;
    let code = format!("S{:07X}", registrations / 2);
    let searches: [(&str, String); 8] = [
        ("no search (the list as it opens)", String::new()),
        ("a whole code", code),
        (
            "a whole code, lower case",
            format!("s{:07x}", registrations / 3),
        ),
        ("one person's email", "dmitri.lee.1011@".into()),
        ("a last name's beginning (Latin)", "garc".into()),
        ("a last name's beginning (Cyrillic)", "смирн".into()),
        ("first and last name", "анна попова".into()),
        ("two letters", "an".into()),
    ];
    println!("| search | found | p50 ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    for (what, term) in &searches {
        let query: String = url_encode(term);
        let url = format!(
            "{}/api/v1/events/{event}/registrations?page=0&size=20&sort=createdAt,desc{}",
            node.gateway,
            if term.is_empty() {
                String::new()
            } else {
                format!("&search={query}")
            }
        );
        let mut times = Vec::with_capacity(ASKS);
        let mut found = 0;
        for _ in 0..ASKS {
            let started = Instant::now();
            let r = client.get(&url).bearer_auth(&organizer).send().await?;
            let status = r.status();
            let body: serde_json::Value = r.json().await?;
            times.push(started.elapsed());
            anyhow::ensure!(status.is_success(), "{what}: {status} {body}");
            found = body["totalElements"].as_u64().unwrap_or_default();
        }
        times.sort();
        println!(
            "| {what} `{term}` | {found} | {:.1} | {:.1} | {:.1} |",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            percentile(&times, 1.0)
        );
    }

    // The plan of the search the page sends, as the application's role sees the table: under
    // its row level security (the owner's plan would not show which conditions may use an
    // index).
    let role: String = db
        .query_one(
            "SELECT rolname FROM pg_roles WHERE shobj_description(oid, 'pg_authid') = $1",
            &[&format!("bilet application role of database {DATABASE}")],
        )
        .await?
        .get(0);
    db.batch_execute(&format!(
        "BEGIN; SET LOCAL ROLE \"{role}\"; SELECT set_config('app.tenant_id', '{tenant}', true)"
    ))
    .await?;
    let plan = db
        .query(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT count(*) FROM event_service.registrations r
              WHERE r.event_id = $1
                AND ((r.search_first >= lower($2) AND r.search_first < lower($2) || chr(1114111))
                     OR (r.search_last >= lower($2) AND r.search_last < lower($2) || chr(1114111))
                     OR (r.search_email >= lower($2) AND r.search_email < lower($2) || chr(1114111)))",
            &[&event, &"смирн"],
        )
        .await?;
    db.batch_execute("COMMIT").await?;
    println!("\nPlan of the count of `смирн`, as the application's role:\n```");
    for row in plan {
        println!("{}", row.get::<_, String>(0));
    }
    println!("```");
    drop(node);
    Ok(())
}

fn url_encode(term: &str) -> String {
    term.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
