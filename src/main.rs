//! The `bilet` command: runs a node of the platform and its maintenance tasks.

use anyhow::{Context, bail};
use bilet::{logging, node, settings};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use storage::identity::admins::{self, AdminChange};

#[derive(Parser)]
#[command(name = "bilet", version, about = "Event ticketing platform")]
struct Cli {
    /// The cluster description; every setting can also come from the environment.
    #[arg(long, env = "BILET_CONFIG", default_value = "cluster.toml")]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the services of this node (cluster.toml `node`, or BILET_NODE).
    Serve,
    /// Applies pending database migrations and exits.
    Migrate,
    /// Grants or revokes the platform administrator role.
    Admin {
        #[command(subcommand)]
        action: AdminAction,
    },
    /// Prints the effective configuration, secrets masked.
    Config,
    /// Inspects or replays the dead-letter queue of a consumer.
    Dlq {
        #[command(subcommand)]
        action: DlqAction,
    },
    /// The events cluster: its members and the shards each owns.
    Cluster {
        #[command(subcommand)]
        action: ClusterAction,
    },
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Prints the members, their addresses and heartbeats, and the shards each owns.
    Status,
}

#[derive(Subcommand)]
enum AdminAction {
    /// Makes the user with this email a platform administrator.
    Grant { email: String },
    /// Takes the role away.
    Revoke { email: String },
}

#[derive(Subcommand)]
enum DlqAction {
    /// Lists the dead letters of a consumer.
    List { consumer: String },
    /// Sends every dead letter of a consumer back to it.
    Replay { consumer: String },
}

/// The database, migrated, for commands that read or change it.
async fn database(config: &domain::config::Config) -> anyhow::Result<storage::Database> {
    storage::db::migrate(
        &config.database.url,
        config.database.app_password.as_ref().map(|p| p.expose()),
    )
    .await
    .context("migration failed")?;
    Ok(storage::Database::connect(&config.database)?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = settings::load(&cli.config)?;
    logging::init(&config.log.filter);
    match cli.command {
        Command::Serve => node::serve(config).await,
        Command::Migrate => {
            storage::db::migrate(
                &config.database.url,
                config.database.app_password.as_ref().map(|p| p.expose()),
            )
            .await
            .context("migration failed")?;
            println!("migrations applied");
            Ok(())
        }
        Command::Config => {
            print!("{}", config.to_masked_toml());
            Ok(())
        }
        Command::Admin { action } => {
            let db = database(&config).await?;
            let (email, change, verb) = match &action {
                AdminAction::Grant { email } => {
                    (email, admins::grant(&db, email).await?, "granted")
                }
                AdminAction::Revoke { email } => {
                    (email, admins::revoke(&db, email).await?, "revoked")
                }
            };
            match change {
                AdminChange::Changed(id) => {
                    println!("platform administrator role {verb}: {email} ({id})")
                }
                AdminChange::Unchanged(id) => {
                    println!("nothing to do: {email} ({id}) already had it {verb}")
                }
                AdminChange::NoSuchUser => {
                    bail!("no active user has the email {email}; they must sign up first")
                }
            }
            Ok(())
        }
        Command::Cluster {
            action: ClusterAction::Status,
        } => {
            let db = database(&config).await?;
            let ttl = std::time::Duration::from_millis(config.cluster.lease_ttl_ms);
            print!("{}", bilet::cluster_status::status(&db, ttl).await?);
            Ok(())
        }
        Command::Dlq { action } => {
            // The in-process broker keeps its dead letters in PostgreSQL, where a running node
            // takes replayed ones up; RabbitMQ keeps them in a queue per consumer.
            let in_process = storage::broker::is_in_process(&config.broker);
            let db = if in_process {
                storage::db::migrate(
                    &config.database.url,
                    config.database.app_password.as_ref().map(|p| p.expose()),
                )
                .await
                .context("migration failed")?;
                Some(storage::Database::connect(&config.database)?)
            } else {
                None
            };
            match action {
                DlqAction::List { consumer } => {
                    let letters = match &db {
                        Some(db) => storage::broker::deliveries::dead_letters(db, Some(&consumer))
                            .await
                            .context("cannot read the dead letters")?,
                        None => {
                            let broker = storage::broker::from_config(&config.broker).await?;
                            broker.dead_letters(Some(&consumer)).await?
                        }
                    };
                    for letter in &letters {
                        println!(
                            "{}",
                            serde_json::json!({
                                "consumer": letter.consumer,
                                "attempts": letter.attempts,
                                "event": letter.event,
                                "raw": if letter.event.is_none() { Some(&letter.raw) } else { None },
                                "reason": letter.reason,
                            })
                        );
                    }
                    eprintln!("{} dead letter(s) for {consumer}", letters.len());
                }
                DlqAction::Replay { consumer } => {
                    let n = match &db {
                        Some(db) => storage::broker::deliveries::replay(db, &consumer)
                            .await
                            .context("cannot replay the dead letters")?,
                        None => {
                            let broker = storage::broker::from_config(&config.broker).await?;
                            broker.replay(&consumer).await?
                        }
                    };
                    println!("replayed {n} message(s) to {consumer}");
                }
            }
            Ok(())
        }
    }
}
