//! Link previews of event pages: a link to `/e/{slug}` shared in Telegram, VK or anywhere else
//! is fetched by the messenger's robot, which runs no JavaScript, so the gateway writes the
//! event's title, time, place and cover into the shell's `<head>` as Open Graph and Twitter
//! tags. The event is read as a visitor without an account would see it (drafts and private
//! events get the plain shell), in this process or from the events service, within half a
//! second (a page is better plain than late). A preview is kept ten seconds, since a link
//! shared in a busy chat is fetched by many clients within moments; an event changed,
//! unpublished or made private stops being previewed as it was soon after, and only previews
//! are kept, so a draft published a moment ago is previewed at once.

use super::files::{Prepared, prepare};
use crate::error::ApiError;
use crate::internal_call;
use crate::state::AppState;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use domain::config::Service;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use storage::db::Scope;
use storage::events::catalog;

/// How long a preview is kept.
const KEEP: Duration = Duration::from_secs(10);
/// Pages kept at most; past it the oldest half goes (slugs asked for are few at a time).
const CAPACITY: usize = 1024;
/// The event's read gets this long, in this process or from the events service.
const TIMEOUT: Duration = Duration::from_millis(500);
/// Characters of the description a preview shows.
const EXCERPT: usize = 200;

/// What a shared link of an event page shows, read from the event (the fields of the API's
/// event that a preview needs; the rest of its answer is ignored).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewDto {
    pub title: String,
    pub description: String,
    pub starts_at: DateTime<Utc>,
    /// The event's own zone, so the preview says the time people will be there.
    pub timezone: String,
    pub location_address: Option<String>,
    pub cover_image_id: Option<uuid::Uuid>,
}

/// The event at `slug` as a visitor without an account sees it (published public events, and
/// those that ended or were cancelled); not found for drafts, private and unknown ones.
async fn preview_of(state: &AppState, slug: &str) -> Result<PreviewDto, ApiError> {
    let e = catalog::get_by_slug(&state.db, Scope::anonymous(), slug).await?;
    Ok(PreviewDto {
        title: e.title,
        description: e.description,
        starts_at: e.starts_at,
        timezone: e.timezone,
        location_address: e.location_address,
        cover_image_id: e.cover_image_id,
    })
}

type Kept = HashMap<String, (Instant, Arc<Prepared>)>;

fn kept() -> &'static Mutex<Kept> {
    static KEPT: OnceLock<Mutex<Kept>> = OnceLock::new();
    KEPT.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The shell of `/e/{slug}` with the event's tags, or None for the plain shell (an unknown,
/// draft or private event, an odd slug, or an events service that did not answer).
pub async fn page(state: &AppState, shell: &Bytes, slug: &str) -> Option<Arc<Prepared>> {
    if !domain::events::slug::is_valid(slug) {
        return None;
    }
    let now = Instant::now();
    if let Ok(kept) = kept().lock()
        && let Some((at, page)) = kept.get(slug)
        && now.duration_since(*at) < KEEP
    {
        return Some(page.clone());
    }
    // Nothing to preview, or no answer in time: the plain shell, asked again next time.
    let preview = tokio::time::timeout(TIMEOUT, ask(state, slug))
        .await
        .ok()??;
    let shell = std::str::from_utf8(shell).ok()?;
    let html = render(shell, &preview, &state.config.http.public_url, slug)?;
    let page = Arc::new(prepare("index.html", html.into_bytes()));
    if let Ok(mut kept) = kept().lock() {
        if kept.len() >= CAPACITY {
            let mut ages: Vec<Instant> = kept.values().map(|(at, _)| *at).collect();
            ages.sort();
            let cut = ages[ages.len() / 2];
            kept.retain(|_, (at, _)| *at > cut);
        }
        kept.insert(slug.to_string(), (now, page.clone()));
    }
    Some(page)
}

/// The preview, or None when there is no public event at `slug` or it could not be learnt.
async fn ask(state: &AppState, slug: &str) -> Option<PreviewDto> {
    if state.config.runs(Service::Events) {
        return preview_of(state, slug).await.ok();
    }
    // The public read a visitor without an account makes (signed as the gateway, with no
    // user): internal routes take no gateway's call, and this one needs none.
    let path = format!("/api/v1/events/by-slug/{slug}");
    internal_call::get(state, Service::Events, Service::Gateway, &path, TIMEOUT)
        .await
        .inspect_err(|e| tracing::debug!(error = %e, "no link preview for an event page"))
        .ok()
        .flatten()
}

/// Text made safe inside a double-quoted attribute or an element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// When and where, as a preview's first line: the event's own clock, in no language.
fn when_and_where(p: &PreviewDto) -> String {
    let zone: chrono_tz::Tz = p.timezone.parse().unwrap_or(chrono_tz::UTC);
    let local = p.starts_at.with_timezone(&zone);
    let mut line = format!("{} ({})", local.format("%Y-%m-%d %H:%M"), p.timezone);
    if let Some(place) = p
        .location_address
        .as_deref()
        .filter(|a| !a.trim().is_empty())
    {
        line.push_str(" · ");
        line.push_str(place.trim());
    }
    line
}

/// The shell with the preview's tags before `</head>` and its title; None if the shell has
/// no `<head>` to put them in.
pub fn render(shell: &str, p: &PreviewDto, public_url: &str, slug: &str) -> Option<String> {
    let base = public_url.trim_end_matches('/');
    let words: String = p
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut excerpt: String = words.chars().take(EXCERPT).collect();
    if words.chars().count() > EXCERPT {
        excerpt.push('…');
    }
    let description = if excerpt.is_empty() {
        when_and_where(p)
    } else {
        format!("{}. {excerpt}", when_and_where(p))
    };
    let (title, description) = (escape(&p.title), escape(&description));
    let mut tags = vec![
        format!(r#"<meta property="og:type" content="website">"#),
        format!(r#"<meta property="og:site_name" content="bilet">"#),
        format!(r#"<meta property="og:url" content="{base}/e/{slug}">"#),
        format!(r#"<meta property="og:title" content="{title}">"#),
        format!(r#"<meta property="og:description" content="{description}">"#),
        format!(r#"<meta name="description" content="{description}">"#),
        format!(r#"<meta name="twitter:title" content="{title}">"#),
        format!(r#"<meta name="twitter:description" content="{description}">"#),
    ];
    match p.cover_image_id {
        Some(cover) => {
            let image = format!("{base}/api/v1/media/{cover}/image?variant=LARGE");
            tags.push(format!(r#"<meta property="og:image" content="{image}">"#));
            tags.push(format!(r#"<meta name="twitter:image" content="{image}">"#));
            tags.push(r#"<meta name="twitter:card" content="summary_large_image">"#.into());
        }
        None => tags.push(r#"<meta name="twitter:card" content="summary">"#.into()),
    }
    let head_end = shell.find("</head>")?;
    let mut html = String::with_capacity(shell.len() + 2048);
    html.push_str(&shell[..head_end]);
    for tag in tags {
        html.push_str("  ");
        html.push_str(&tag);
        html.push('\n');
    }
    html.push_str(&shell[head_end..]);
    Some(html.replacen(
        "<title>bilet</title>",
        &format!("<title>{title} — bilet</title>"),
        1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHELL: &str = "<html><head>\n  <title>bilet</title>\n</head><body></body></html>";

    fn preview() -> PreviewDto {
        PreviewDto {
            title: "Jazz & \"blues\" <live>".into(),
            description: "A  trio\nplays.".into(),
            starts_at: "2026-12-12T16:00:00Z".parse().unwrap(),
            timezone: "Europe/Moscow".into(),
            location_address: Some("Club, 1".into()),
            cover_image_id: None,
        }
    }

    #[test]
    fn tags_carry_the_event_escaped_on_its_own_clock() {
        let html = render(SHELL, &preview(), "https://bilet.example/", "jazz").unwrap();
        assert!(
            html.contains(
                r#"<meta property="og:title" content="Jazz &amp; &quot;blues&quot; &lt;live&gt;">"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<meta property="og:description" content="2026-12-12 19:00 (Europe/Moscow) · Club, 1. A trio plays.">"#), "{html}");
        assert!(
            html.contains(r#"<meta property="og:url" content="https://bilet.example/e/jazz">"#)
        );
        assert!(html.contains(r#"<meta name="twitter:card" content="summary">"#));
        assert!(!html.contains("og:image"), "no cover, no image");
        assert!(html.contains("<title>Jazz &amp; &quot;blues&quot; &lt;live&gt; — bilet</title>"));
        assert!(html.find("og:title").unwrap() < html.find("</head>").unwrap());
    }

    #[test]
    fn a_cover_is_a_large_image_at_an_address_that_stays() {
        let mut p = preview();
        let cover = uuid::Uuid::nil();
        p.cover_image_id = Some(cover);
        p.description = "x".repeat(300);
        let html = render(SHELL, &p, "http://localhost:8080", "jazz").unwrap();
        let image = format!("http://localhost:8080/api/v1/media/{cover}/image?variant=LARGE");
        assert!(html.contains(&format!(r#"<meta property="og:image" content="{image}">"#)));
        assert!(html.contains(r#"content="summary_large_image""#));
        assert!(
            html.contains(&format!("{}…\"", "x".repeat(200))),
            "the description is cut at 200 characters"
        );
        assert_eq!(render("<html></html>", &p, "http://x", "jazz"), None);
    }
}
