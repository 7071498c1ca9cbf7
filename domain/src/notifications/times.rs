//! How times are written in messages: on the event's own clock (its IANA time zone, from
//! the tz database compiled into the binary), always with the zone's abbreviation or offset,
//! and how far off a start is ("today at 19:00", "tomorrow at 19:00", "in 3 hours").

use crate::i18n::Lang;
use chrono::{DateTime, Datelike, Duration, Offset, Utc};
use chrono_tz::{OffsetName, Tz};

/// An event's time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone(Tz);

impl Default for Zone {
    fn default() -> Self {
        Zone::UTC
    }
}

impl Zone {
    /// Coordinated Universal Time.
    pub const UTC: Zone = Zone(Tz::UTC);

    /// The zone of an IANA name (`Europe/Moscow`), if the tz database knows it.
    pub fn named(name: &str) -> Option<Zone> {
        name.parse::<Tz>().ok().map(Zone)
    }

    /// The zone of a stored name; UTC for a name the tz database does not know (events saved
    /// before names were checked against it), which is still labelled, so never misread.
    pub fn or_utc(name: &str) -> Zone {
        Zone::named(name).unwrap_or(Zone::UTC)
    }

    /// Its IANA name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    fn local(self, at: DateTime<Utc>) -> DateTime<Tz> {
        at.with_timezone(&self.0)
    }
}

/// The zone's label at that instant: its abbreviation (`MSK`, `CET`, `UTC`), or `UTC+10`
/// where the tz database has only a number (as for Asia/Vladivostok).
fn label(local: &DateTime<Tz>) -> String {
    if let Some(name) = local.offset().abbreviation()
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        return name.to_string();
    }
    let seconds = local.offset().fix().local_minus_utc();
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    match (minutes / 60, minutes % 60) {
        (0, 0) => "UTC".to_string(),
        (h, 0) => format!("UTC{sign}{h}"),
        (h, m) => format!("UTC{sign}{h}:{m:02}"),
    }
}

/// A date and time on the zone's clock, with its label: `01.12.2026 19:00 MSK`,
/// `1 Dec 2026, 19:00 MSK`.
pub fn date(at: DateTime<Utc>, zone: Zone, lang: Lang) -> String {
    let local = zone.local(at);
    let label = label(&local);
    match lang {
        Lang::Ru => format!("{} {label}", local.format("%d.%m.%Y %H:%M")),
        Lang::En => format!("{} {label}", local.format("%-d %b %Y, %H:%M")),
    }
}

/// The time of day on the zone's clock, with its label: `19:00 MSK`.
pub fn clock(at: DateTime<Utc>, zone: Zone) -> String {
    let local = zone.local(at);
    format!("{} {}", local.format("%H:%M"), label(&local))
}

/// Up to this far ahead a start is told as a span ("in 3 hours"), not as a time of day:
/// the reader need not work out what "today at 19:00" means from where they are.
const AS_A_SPAN: Duration = Duration::hours(6);

/// How far off `start` is at `now`, in words that follow "starts" / "начнётся": within six
/// hours a span ("in 2 hours 30 minutes"), else the day on the event's clock ("today at 19:00
/// MSK", "tomorrow at …", "on 3 Dec at …"). The day is the event's local day, so a message
/// sent two hours before a start just after midnight says "in 2 hours", never "tomorrow".
pub fn starts_in(now: DateTime<Utc>, start: DateTime<Utc>, zone: Zone, lang: Lang) -> String {
    let ahead = start - now;
    if ahead < Duration::minutes(1) {
        return match lang {
            Lang::Ru => "сейчас".into(),
            Lang::En => "now".into(),
        };
    }
    if ahead < AS_A_SPAN {
        return span(ahead, lang);
    }
    let (today, day) = (zone.local(now).date_naive(), zone.local(start).date_naive());
    let at = clock(start, zone);
    match ((day - today).num_days(), lang) {
        (0, Lang::Ru) => format!("сегодня в {at}"),
        (0, Lang::En) => format!("today at {at}"),
        (1, Lang::Ru) => format!("завтра в {at}"),
        (1, Lang::En) => format!("tomorrow at {at}"),
        (_, Lang::Ru) => format!("{} {} в {at}", day.day(), MONTHS_RU[day.month0() as usize]),
        (_, Lang::En) => format!("on {} at {at}", zone.local(start).format("%-d %b")),
    }
}

/// Russian month names in the genitive ("3 декабря").
const MONTHS_RU: [&str; 12] = [
    "января",
    "февраля",
    "марта",
    "апреля",
    "мая",
    "июня",
    "июля",
    "августа",
    "сентября",
    "октября",
    "ноября",
    "декабря",
];

/// "in 2 hours 30 minutes" / "через 2 часа 30 минут", to the nearest minute.
fn span(ahead: Duration, lang: Lang) -> String {
    let minutes = (ahead.num_seconds() + 30) / 60;
    let (h, m) = (minutes / 60, minutes % 60);
    let hours = (h > 0).then(|| count(h, lang, ["час", "часа", "часов"], ["hour", "hours"]));
    let mins = (m > 0).then(|| {
        count(
            m,
            lang,
            ["минуту", "минуты", "минут"],
            ["minute", "minutes"],
        )
    });
    let words: Vec<String> = [hours, mins].into_iter().flatten().collect();
    match lang {
        Lang::Ru => format!("через {}", words.join(" ")),
        Lang::En => format!("in {}", words.join(" ")),
    }
}

/// `n` with the noun in the form its number takes.
fn count(n: i64, lang: Lang, ru: [&str; 3], en: [&str; 2]) -> String {
    let noun = match lang {
        Lang::Ru => ru[russian_form(n)],
        Lang::En if n == 1 => en[0],
        Lang::En => en[1],
    };
    format!("{n} {noun}")
}

/// Which of the three Russian forms a number takes: 1 час, 2 часа, 5 часов, 21 час.
fn russian_form(n: i64) -> usize {
    let (last, tens) = (n % 10, n % 100);
    if last == 1 && tens != 11 {
        0
    } else if (2..=4).contains(&last) && !(12..=14).contains(&tens) {
        1
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn zone(name: &str) -> Zone {
        Zone::named(name).unwrap()
    }

    #[test]
    fn only_real_zones_are_known() {
        assert_eq!(zone("Asia/Vladivostok").name(), "Asia/Vladivostok");
        assert!(Zone::named("UTC").is_some());
        assert!(Zone::named("America/Argentina/Buenos_Aires").is_some());
        assert!(Zone::named("Mars/Olympus").is_none());
        assert!(Zone::named("europe/moscow").is_none());
        assert_eq!(Zone::or_utc("Mars/Olympus"), Zone::UTC);
    }

    #[test]
    fn dates_are_on_the_event_clock_with_its_label() {
        // 18:05 UTC is 21:05 in Moscow and 04:05 the next day in Vladivostok.
        let t = at(2026, 12, 1, 18, 5);
        assert_eq!(date(t, Zone::UTC, Lang::Ru), "01.12.2026 18:05 UTC");
        assert_eq!(date(t, Zone::UTC, Lang::En), "1 Dec 2026, 18:05 UTC");
        assert_eq!(
            date(t, zone("Europe/Moscow"), Lang::Ru),
            "01.12.2026 21:05 MSK"
        );
        assert_eq!(
            date(t, zone("Asia/Vladivostok"), Lang::Ru),
            "02.12.2026 04:05 UTC+10"
        );
        assert_eq!(
            date(t, zone("Asia/Vladivostok"), Lang::En),
            "2 Dec 2026, 04:05 UTC+10"
        );
        assert_eq!(
            date(t, zone("America/New_York"), Lang::En),
            "1 Dec 2026, 13:05 EST"
        );
        // Summer time changes the label with the offset; half hours show their minutes.
        let july = at(2026, 7, 1, 12, 0);
        assert_eq!(clock(july, zone("Europe/Berlin")), "14:00 CEST");
        assert_eq!(clock(july, zone("Asia/Kolkata")), "17:30 IST");
        assert_eq!(clock(july, zone("Asia/Kathmandu")), "17:45 UTC+5:45");
        assert_eq!(clock(july, zone("America/Sao_Paulo")), "09:00 UTC-3");
    }

    #[test]
    fn a_start_within_six_hours_is_a_span() {
        let start = at(2026, 12, 1, 16, 0);
        let vl = zone("Asia/Vladivostok");
        let two_before = start - Duration::hours(2);
        assert_eq!(starts_in(two_before, start, vl, Lang::En), "in 2 hours");
        assert_eq!(starts_in(two_before, start, vl, Lang::Ru), "через 2 часа");
        // A few seconds late or early still reads as two hours.
        let late = two_before + Duration::seconds(3);
        assert_eq!(starts_in(late, start, vl, Lang::En), "in 2 hours");
        let t = start - Duration::minutes(150);
        assert_eq!(starts_in(t, start, vl, Lang::En), "in 2 hours 30 minutes");
        assert_eq!(starts_in(t, start, vl, Lang::Ru), "через 2 часа 30 минут");
        let t = start - Duration::minutes(61);
        assert_eq!(starts_in(t, start, vl, Lang::En), "in 1 hour 1 minute");
        assert_eq!(starts_in(t, start, vl, Lang::Ru), "через 1 час 1 минуту");
        let t = start - Duration::minutes(5);
        assert_eq!(starts_in(t, start, vl, Lang::Ru), "через 5 минут");
        assert_eq!(
            starts_in(start - Duration::hours(5), start, vl, Lang::Ru),
            "через 5 часов"
        );
        assert_eq!(starts_in(start, start, vl, Lang::En), "now");
        assert_eq!(
            starts_in(start + Duration::hours(1), start, vl, Lang::Ru),
            "сейчас"
        );
    }

    #[test]
    fn two_hours_before_a_start_after_local_midnight_is_never_tomorrow() {
        // 00:30 in Vladivostok on 2 Dec is 14:30 UTC on 1 Dec; sent at 22:30 local, 1 Dec.
        let vl = zone("Asia/Vladivostok");
        let start = at(2026, 12, 1, 14, 30);
        let now = start - Duration::hours(2);
        assert_eq!(starts_in(now, start, vl, Lang::En), "in 2 hours");
        assert_eq!(starts_in(now, start, vl, Lang::Ru), "через 2 часа");
    }

    #[test]
    fn farther_starts_name_the_day_on_the_event_clock() {
        let vl = zone("Asia/Vladivostok");
        // 19:00 in Vladivostok on 2 Dec is 09:00 UTC on 2 Dec.
        let start = at(2026, 12, 2, 9, 0);
        // 08:00 local on 2 Dec (22:00 UTC on 1 Dec: "tomorrow" in UTC, "today" there).
        let morning = at(2026, 12, 1, 22, 0);
        assert_eq!(
            starts_in(morning, start, vl, Lang::En),
            "today at 19:00 UTC+10"
        );
        assert_eq!(
            starts_in(morning, start, vl, Lang::Ru),
            "сегодня в 19:00 UTC+10"
        );
        // 19:00 local on 1 Dec: 24 hours ahead, the next local day.
        let day_before = at(2026, 12, 1, 9, 0);
        assert_eq!(
            starts_in(day_before, start, vl, Lang::En),
            "tomorrow at 19:00 UTC+10"
        );
        assert_eq!(
            starts_in(day_before, start, vl, Lang::Ru),
            "завтра в 19:00 UTC+10"
        );
        // 01:00 in Moscow on 2 Dec is still 1 Dec in UTC: the day is Moscow's.
        let msk = zone("Europe/Moscow");
        assert_eq!(
            starts_in(
                at(2026, 12, 1, 22, 0),
                at(2026, 12, 2, 16, 0),
                msk,
                Lang::Ru
            ),
            "сегодня в 19:00 MSK"
        );
        assert_eq!(
            starts_in(day_before, start + Duration::days(2), vl, Lang::En),
            "on 4 Dec at 19:00 UTC+10"
        );
        assert_eq!(
            starts_in(day_before, start + Duration::days(2), vl, Lang::Ru),
            "4 декабря в 19:00 UTC+10"
        );
    }

    #[test]
    fn russian_numbers_take_their_form() {
        let forms: Vec<usize> = [1, 2, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111]
            .into_iter()
            .map(russian_form)
            .collect();
        assert_eq!(forms, [0, 1, 1, 2, 2, 2, 2, 0, 1, 2, 0, 2]);
    }
}
