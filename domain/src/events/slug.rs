//! Slugs made from titles: lower-case Latin letters, digits and hyphens, Cyrillic
//! transliterated.

/// Longest generated slug.
pub const MAX_LEN: usize = 80;

fn transliterate(c: char) -> Option<&'static str> {
    Some(match c {
        'а' => "a",
        'б' => "b",
        'в' => "v",
        'г' => "g",
        'д' => "d",
        'е' => "e",
        'ё' => "e",
        'ж' => "zh",
        'з' => "z",
        'и' => "i",
        'й' => "y",
        'к' => "k",
        'л' => "l",
        'м' => "m",
        'н' => "n",
        'о' => "o",
        'п' => "p",
        'р' => "r",
        'с' => "s",
        'т' => "t",
        'у' => "u",
        'ф' => "f",
        'х' => "kh",
        'ц' => "ts",
        'ч' => "ch",
        'ш' => "sh",
        'щ' => "shch",
        'ъ' | 'ь' => "",
        'ы' => "y",
        'э' => "e",
        'ю' => "yu",
        'я' => "ya",
        'і' => "i",
        'ї' => "yi",
        'є' => "ye",
        'ґ' => "g",
        _ => return None,
    })
}

/// The slug of a title; `event` when nothing usable is left.
pub fn slugify(title: &str) -> String {
    let mut out = String::new();
    for c in title.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if let Some(latin) = transliterate(c) {
            out.push_str(latin);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut slug: String = out.trim_matches('-').chars().take(MAX_LEN).collect();
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        "event".into()
    } else {
        slug
    }
}

/// Whether a slug given by a client is acceptable.
pub fn is_valid(slug: &str) -> bool {
    (3..=MAX_LEN).contains(&slug.len())
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
}

/// How many slugs an event's creation tries before giving up with a conflict.
pub const ATTEMPTS: usize = 8;

/// The slug to try at the `attempt`-th insert (from 0): a slug the organizer chose is tried
/// once, as it is, and must be free; a generated one gets the random `suffix` after its first
/// try, until a free one is found. `None`: stop trying.
pub fn candidate(base: &str, chosen: bool, attempt: usize, suffix: &str) -> Option<String> {
    match (attempt, chosen) {
        (0, _) => Some(base.to_string()),
        (_, true) => None,
        (_, false) => Some(format!("{base}-{suffix}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_slug_is_tried_once_and_a_generated_one_gets_a_suffix() {
        assert_eq!(
            candidate("gala", true, 0, "a1b2c3").as_deref(),
            Some("gala")
        );
        assert_eq!(candidate("gala", true, 1, "a1b2c3"), None);
        assert_eq!(
            candidate("gala", false, 0, "a1b2c3").as_deref(),
            Some("gala")
        );
        assert_eq!(
            candidate("gala", false, 1, "a1b2c3").as_deref(),
            Some("gala-a1b2c3")
        );
    }

    #[test]
    fn cyrillic_is_transliterated() {
        assert_eq!(slugify("Концерт в Москве 2026!"), "kontsert-v-moskve-2026");
        assert_eq!(slugify("Щедрый ёж — Хэллоуин"), "shchedryy-ezh-khellouin");
        assert_eq!(slugify("Rust Meetup: Spring"), "rust-meetup-spring");
        assert_eq!(slugify("!!!"), "event");
        assert!(slugify(&"я".repeat(100)).len() <= MAX_LEN);
        assert!(is_valid(&slugify("Фестиваль")));
        assert!(!is_valid("Bad Slug"));
    }
}
