//! The one path the gateway decides on. A request path is taken as it came, or refused: the
//! gateway never normalizes, so the path it checks (public routes, internal routes, rate-limit
//! buckets, routing) is byte for byte the path it forwards and the service routes on. Refused
//! are the forms that some layer might read differently from another: dot segments, empty
//! segments, backslashes, percent-escapes of a separator, a dot, a percent sign or an
//! unreserved character, malformed escapes and control bytes.

/// Why a path was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmbiguousPath {
    /// Does not start with `/`.
    NotAbsolute,
    /// A `.` or `..` segment, raw or percent-encoded.
    DotSegment,
    /// `//` inside the path.
    EmptySegment,
    /// A backslash, raw or encoded.
    Backslash,
    /// An escape of `/`, `%` or an unreserved character (which decoders treat as the
    /// character itself), or an escape that is not two hex digits.
    Escape,
    /// A control byte or NUL.
    Control,
    /// A byte RFC 3986 does not allow unescaped in a path (space, quotes, braces, `?`, `#`,
    /// raw non-ASCII), which parsers escape or cut differently.
    Character,
}

impl AmbiguousPath {
    /// A short reason for the error body.
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotAbsolute => "the path must start with /",
            Self::DotSegment => "the path contains a dot segment",
            Self::EmptySegment => "the path contains an empty segment",
            Self::Backslash => "the path contains a backslash",
            Self::Escape => "the path contains an ambiguous percent-escape",
            Self::Control => "the path contains a control character",
            Self::Character => "the path contains a character that must be percent-encoded",
        }
    }
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// `pchar` of RFC 3986 without the escapes, plus the separator.
fn is_path_byte(byte: u8) -> bool {
    is_unreserved(byte) || b"!$&'()*+,;=:@/".contains(&byte)
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Accepts `path` (without the query) when every reader sees the same segments in it.
pub fn check(path: &str) -> Result<(), AmbiguousPath> {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return Err(AmbiguousPath::NotAbsolute);
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => return Err(AmbiguousPath::Backslash),
            b if b < 0x20 || b == 0x7f => return Err(AmbiguousPath::Control),
            b'%' => {
                let decoded = match (bytes.get(i + 1), bytes.get(i + 2)) {
                    (Some(&h), Some(&l)) => match (hex(h), hex(l)) {
                        (Some(h), Some(l)) => h * 16 + l,
                        _ => return Err(AmbiguousPath::Escape),
                    },
                    _ => return Err(AmbiguousPath::Escape),
                };
                match decoded {
                    b'\\' => return Err(AmbiguousPath::Backslash),
                    b'.' => return Err(AmbiguousPath::DotSegment),
                    b if b < 0x20 || b == 0x7f => return Err(AmbiguousPath::Control),
                    b'/' | b'%' => return Err(AmbiguousPath::Escape),
                    b if is_unreserved(b) => return Err(AmbiguousPath::Escape),
                    _ => {}
                }
                i += 3;
                continue;
            }
            b if !is_path_byte(b) => return Err(AmbiguousPath::Character),
            _ => {}
        }
        i += 1;
    }
    // The leading "/" makes the first segment empty; a trailing "/" is a last empty segment
    // that no reader drops or merges, so only empty segments in between are refused.
    let segments: Vec<&str> = path[1..].split('/').collect();
    let last = segments.len() - 1;
    for (n, segment) in segments.iter().enumerate() {
        if *segment == "." || *segment == ".." {
            return Err(AmbiguousPath::DotSegment);
        }
        if segment.is_empty() && n != last {
            return Err(AmbiguousPath::EmptySegment);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_pass() {
        for ok in [
            "/",
            "/health/live",
            "/api/v1/events",
            "/api/v1/events/",
            "/api/v1/events/0190a000-0000-7000-8000-000000000001/ticket-types",
            "/api/v1/organizations/join/AbC-12_x~",
            "/api/v1/events/slug%20with%20space",
            "/api/v1/events/%D0%BA%D0%BE%D0%BD%D1%86%D0%B5%D1%80%D1%82",
            "/api/v1/events/a.b/..c/c..",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn every_trick_is_refused() {
        let refused = [
            ("api/v1/events", AmbiguousPath::NotAbsolute),
            ("", AmbiguousPath::NotAbsolute),
            (
                "/api/v1/events/../notifications/send",
                AmbiguousPath::DotSegment,
            ),
            ("/api/v1/events/./x", AmbiguousPath::DotSegment),
            ("/api/v1/events/..", AmbiguousPath::DotSegment),
            (
                "/api/v1/events/%2e%2e/notifications/send",
                AmbiguousPath::DotSegment,
            ),
            (
                "/api/v1/events/%2E./notifications/send",
                AmbiguousPath::DotSegment,
            ),
            (
                "/api/v1/events/.%2e/notifications/send",
                AmbiguousPath::DotSegment,
            ),
            (
                "/api/v1/events%2f..%2fnotifications/send",
                AmbiguousPath::Escape,
            ),
            ("/api/v1/events%2F1", AmbiguousPath::Escape),
            ("/api/v1//events", AmbiguousPath::EmptySegment),
            ("//api/v1/events", AmbiguousPath::EmptySegment),
            ("/api/v1/events\\..\\x", AmbiguousPath::Backslash),
            ("/api/v1/events%5c..%5cx", AmbiguousPath::Backslash),
            ("/api/v1/%252e%252e/x", AmbiguousPath::Escape),
            ("/api/v1/notific%61tions/send", AmbiguousPath::Escape),
            ("/api/v1/events/%zz", AmbiguousPath::Escape),
            ("/api/v1/events/%2", AmbiguousPath::Escape),
            ("/api/v1/events/%00", AmbiguousPath::Control),
            ("/api/v1/events/\u{7f}", AmbiguousPath::Control),
            ("/api/v1/events/a b", AmbiguousPath::Character),
            ("/api/v1/events/{id}", AmbiguousPath::Character),
            ("/api/v1/events/\"x\"", AmbiguousPath::Character),
            ("/api/v1/events?x", AmbiguousPath::Character),
            ("/api/v1/events#x", AmbiguousPath::Character),
            ("/api/v1/события", AmbiguousPath::Character),
        ];
        for (path, why) in refused {
            assert_eq!(check(path), Err(why), "{path}");
        }
    }
}

/// Properties over generated paths built from the pieces attacks are made of.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("/".to_string()),
            Just(".".to_string()),
            Just("..".to_string()),
            Just("%2e".to_string()),
            Just("%2E".to_string()),
            Just("%2f".to_string()),
            Just("%2F".to_string()),
            Just("%5c".to_string()),
            Just("\\".to_string()),
            Just("%25".to_string()),
            Just("%".to_string()),
            Just("%61".to_string()),
            Just("%20".to_string()),
            Just("%D0%BA".to_string()),
            Just("%00".to_string()),
            Just(";".to_string()),
            Just("?".to_string()),
            Just("#".to_string()),
            Just("~".to_string()),
            Just(" ".to_string()),
            Just("api".to_string()),
            Just("v1".to_string()),
            Just("notifications".to_string()),
            Just("send".to_string()),
            Just("internal".to_string()),
            "[a-zA-Z0-9_-]{1,4}",
            any::<char>().prop_map(|c| c.to_string()),
        ]
    }

    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(piece(), 0..14).prop_map(|pieces| format!("/{}", pieces.concat()))
    }

    /// Percent-decodes, as a service or a file system behind it would.
    fn decoded(path: &str) -> Vec<u8> {
        let bytes = path.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && let (Some(h), Some(l)) = (
                    bytes.get(i + 1).and_then(|b| hex(*b)),
                    bytes.get(i + 2).and_then(|b| hex(*b)),
                )
            {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
            out.push(bytes[i]);
            i += 1;
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// An accepted path reaches the service exactly as the gateway judged it: the
        /// forwarding client's URL parser keeps it byte for byte, and decoding it yields the
        /// same segments, none of them a dot segment.
        #[test]
        fn accepted_paths_are_forwarded_as_judged(path in path()) {
            if check(&path).is_ok() {
                let url = reqwest::Url::parse(&format!("http://service.internal{path}"));
                prop_assert!(url.is_ok(), "{path}");
                let url = url.unwrap();
                prop_assert_eq!(url.path(), path.as_str());
                prop_assert!(url.query().is_none() && url.fragment().is_none());
                let raw: Vec<&str> = path.split('/').collect();
                let plain = decoded(&path);
                let plain: Vec<&[u8]> = plain.split(|b| *b == b'/').collect();
                prop_assert_eq!(raw.len(), plain.len(), "an escape became a separator: {}", path);
                for segment in plain {
                    prop_assert!(segment != b"." && segment != b"..", "{}", path);
                    prop_assert!(!segment.contains(&b'\\') && !segment.contains(&0), "{}", path);
                }
            }
        }

        /// No spelling of an internal route other than the route itself gets past the door:
        /// whatever a URL parser makes of an accepted path is that path.
        #[test]
        fn internal_routes_have_one_spelling(path in path()) {
            let normalized = reqwest::Url::parse(&format!("http://h{path}"))
                .map(|u| u.path().to_string())
                .unwrap_or_default();
            if crate::gateway::is_internal(&normalized) && normalized != path {
                prop_assert!(check(&path).is_err(), "{path} reaches {normalized}");
            }
        }
    }

    #[test]
    fn known_spellings_of_the_send_route_are_refused() {
        for path in [
            "/api/v1/events/../notifications/send",
            "/api/v1/events/%2e%2e/notifications/send",
            "/api/v1/notifications/./send",
            "/api/v1/x/%2E%2E/notifications/send",
            "/api/v1/notifications%2fsend",
            "/api/v1/notifications/%73end",
        ] {
            assert!(check(path).is_err(), "{path}");
        }
    }
}
