//! PEM text (RFC 7468) to DER: the keys and certificates of wallet passes arrive as PEM in
//! the configuration, often through an environment variable, where the line breaks may have
//! been written as `\n` (as in a Google service account's JSON key file).

use base64::Engine;

/// The DER of every `-----BEGIN <label>-----` block of `text`, with its label, in order.
pub(super) fn blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let text = text.replace("\\n", "\n");
    let mut found = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        let mut closed = false;
        for line in lines.by_ref() {
            if line == end {
                closed = true;
                break;
            }
            // Headers of the old encapsulated form (`Proc-Type: …`) are not base64.
            if line.contains(':') {
                return Err(format!("the {label} block has headers (an encrypted key?)"));
            }
            body.push_str(line);
        }
        if !closed {
            return Err(format!("the {label} block has no END line"));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(body.as_bytes())
            .map_err(|e| format!("the {label} block is not base64: {e}"))?;
        found.push((label.to_string(), der));
    }
    if found.is_empty() {
        return Err("no PEM block (-----BEGIN …-----) found".into());
    }
    Ok(found)
}

/// The DER of the first block labelled one of `labels`, with its label.
pub(super) fn first(text: &str, labels: &[&str]) -> Result<(String, Vec<u8>), String> {
    blocks(text)?
        .into_iter()
        .find(|(label, _)| labels.contains(&label.as_str()))
        .ok_or_else(|| format!("no {} block found", labels.join(" or ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_read_with_real_or_escaped_line_breaks() {
        let pem = "junk\n-----BEGIN CERTIFICATE-----\nAAEC\nAw==\n-----END CERTIFICATE-----\n";
        assert_eq!(
            blocks(pem).unwrap(),
            vec![("CERTIFICATE".to_string(), vec![0, 1, 2, 3])]
        );
        let escaped = "-----BEGIN PRIVATE KEY-----\\nAAEC\\n-----END PRIVATE KEY-----\\n";
        assert_eq!(
            first(escaped, &["RSA PRIVATE KEY", "PRIVATE KEY"]).unwrap(),
            ("PRIVATE KEY".to_string(), vec![0, 1, 2])
        );
    }

    #[test]
    fn broken_text_is_refused_with_a_reason() {
        assert!(blocks("nothing").unwrap_err().contains("no PEM block"));
        assert!(
            blocks("-----BEGIN X-----\nAAEC\n")
                .unwrap_err()
                .contains("END")
        );
        assert!(
            blocks("-----BEGIN X-----\n!!\n-----END X-----")
                .unwrap_err()
                .contains("base64")
        );
        assert!(first("-----BEGIN X-----\nAAEC\n-----END X-----", &["Y"]).is_err());
    }
}
