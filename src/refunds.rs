//! `bilet refunds list|retry`: the refunds on their way to the providers, and sending a failed
//! one again. A retried refund is taken by the payments worker of a running events node.

use domain::events::checkout::decimal_amount;
use domain::events::refunds::RefundStatus;
use std::fmt::Write;
use storage::Database;
use storage::Scope;
use storage::events::refunds::{self, Refund, RefundFilter};
use uuid::Uuid;

/// The refunds of every organization (newest first, at most `limit`), one line each.
pub async fn list(
    db: &Database,
    status: Option<&str>,
    event: Option<Uuid>,
    limit: i64,
) -> anyhow::Result<String> {
    let status = match status {
        Some(s) => Some(RefundStatus::parse(&s.to_ascii_uppercase()).ok_or_else(|| {
            anyhow::anyhow!("no refund status `{s}`: requested, sent, succeeded or failed")
        })?),
        None => None,
    };
    let filter = RefundFilter {
        event,
        status,
        ..RefundFilter::default()
    };
    let found = refunds::list(db, Scope::system(), &filter, limit).await?;
    let mut text = String::new();
    for refund in &found {
        let _ = writeln!(text, "{}", line(refund));
    }
    let _ = writeln!(text, "{} refund(s)", found.len());
    Ok(text)
}

fn line(r: &Refund) -> String {
    format!(
        "{id}  {status:<9}  {amount} {currency}  {provider}  registration {registration}  {reason}  sends {sends}{refund}{error}",
        id = r.id,
        status = r.status.as_str(),
        amount = decimal_amount(r.amount_cents),
        currency = r.currency,
        provider = r.provider.map_or("-", |p| p.as_str()),
        registration = r.registration_id,
        reason = r.reason,
        sends = r.sends,
        refund = r
            .provider_refund_id
            .as_deref()
            .map(|id| format!("  provider refund {id}"))
            .unwrap_or_default(),
        error = r
            .last_error
            .as_deref()
            .map(|e| format!("  last error: {e}"))
            .unwrap_or_default(),
    )
}

/// Requests a failed refund again.
pub async fn retry(db: &Database, id: Uuid) -> anyhow::Result<String> {
    match refunds::retry(db, Scope::system(), id, chrono::Utc::now()).await {
        Ok(refund) => Ok(format!(
            "refund {} requested again; a running events node sends it within seconds\n{}\n",
            refund.id,
            line(&refund)
        )),
        Err(storage::Error::Refused(r)) => {
            let why = r
                .text
                .map(|t| t.en.to_string())
                .unwrap_or_else(|| r.code.as_str().to_string());
            anyhow::bail!("refund {id}: {why}")
        }
        Err(e) => Err(e.into()),
    }
}
