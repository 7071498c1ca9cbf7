//! The little DER (ITU-T X.690) a pass signature needs: writing the few types of a PKCS#7
//! SignedData, and reading a certificate far enough to name its issuer and serial number and
//! find its public key. Nothing else of ASN.1 is supported.

/// Tags used here.
pub(super) const INTEGER: u8 = 0x02;
pub(super) const BIT_STRING: u8 = 0x03;
pub(super) const OCTET_STRING: u8 = 0x04;
pub(super) const NULL: u8 = 0x05;
pub(super) const OID: u8 = 0x06;
pub(super) const UTC_TIME: u8 = 0x17;
pub(super) const SEQUENCE: u8 = 0x30;
pub(super) const SET: u8 = 0x31;

/// A context-specific constructed tag `[n]`.
pub(super) const fn context(n: u8) -> u8 {
    0xA0 | n
}

/// One element: its tag, then its length, then `content`.
pub(super) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of already encoded elements.
pub(super) fn sequence(items: &[&[u8]]) -> Vec<u8> {
    tlv(SEQUENCE, &items.concat())
}

/// A SET OF already encoded elements, in the ascending order of their encodings that DER
/// asks for, under `tag` (SET, or `[n]` where the SET is implicitly tagged).
pub(super) fn set_of(tag: u8, items: &[&[u8]]) -> Vec<u8> {
    let mut sorted: Vec<&[u8]> = items.to_vec();
    sorted.sort();
    tlv(tag, &sorted.concat())
}

/// A non-negative INTEGER.
pub(super) fn uint(value: u64) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count().min(7);
    let mut content = Vec::with_capacity(9);
    // A leading bit set would read as negative.
    if bytes[skip] & 0x80 != 0 {
        content.push(0);
    }
    content.extend_from_slice(&bytes[skip..]);
    tlv(INTEGER, &content)
}

/// An OBJECT IDENTIFIER from its arcs (the first two fold into one byte).
pub(super) fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut content = Vec::new();
    let first = arcs.first().copied().unwrap_or(0) * 40 + arcs.get(1).copied().unwrap_or(0);
    for arc in std::iter::once(first).chain(arcs.iter().skip(2).copied()) {
        let mut groups = vec![(arc & 0x7f) as u8];
        let mut rest = arc >> 7;
        while rest > 0 {
            groups.push(0x80 | (rest & 0x7f) as u8);
            rest >>= 7;
        }
        content.extend(groups.iter().rev());
    }
    tlv(OID, &content)
}

/// An AlgorithmIdentifier with NULL parameters.
pub(super) fn algorithm(arcs: &[u64]) -> Vec<u8> {
    sequence(&[&oid(arcs), &tlv(NULL, &[])])
}

/// A UTCTime (`YYMMDDHHMMSSZ`), which X.509 and CMS use for 1950 to 2049.
pub(super) fn utc_time(at: chrono::DateTime<chrono::Utc>) -> Vec<u8> {
    tlv(UTC_TIME, at.format("%y%m%d%H%M%SZ").to_string().as_bytes())
}

/// One element read from DER: its tag, its content, and all its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Element<'a> {
    pub tag: u8,
    pub content: &'a [u8],
    pub raw: &'a [u8],
}

/// Reads the element at the start of `input`; answers it and what follows it.
pub(super) fn read(input: &[u8]) -> Result<(Element<'_>, &[u8]), String> {
    let short = || "DER ends inside an element".to_string();
    let (&tag, rest) = input.split_first().ok_or_else(short)?;
    if tag & 0x1f == 0x1f {
        return Err("multi-byte tags are not supported".into());
    }
    let (&first, rest) = rest.split_first().ok_or_else(short)?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 {
            return Err("unsupported DER length".into());
        }
        let bytes = rest.get(..count).ok_or_else(short)?;
        let len = bytes.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    let content = rest.get(..len).ok_or_else(short)?;
    let header = input.len() - rest.len();
    Ok((
        Element {
            tag,
            content,
            raw: &input[..header + len],
        },
        &rest[len..],
    ))
}

/// The elements inside a constructed element's content, in order.
pub(super) fn children(content: &[u8]) -> Result<Vec<Element<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let (element, after) = read(rest)?;
        out.push(element);
        rest = after;
    }
    Ok(out)
}

/// What a pass signature takes from a certificate.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct CertificateParts<'a> {
    /// The issuer's Name, as encoded.
    pub issuer: &'a [u8],
    /// The serial number INTEGER, as encoded.
    pub serial: &'a [u8],
    /// The subject's public key, the BIT STRING's content without its unused-bits byte (for
    /// RSA: the PKCS#1 RSAPublicKey).
    pub public_key: &'a [u8],
}

/// Reads a DER X.509 certificate's issuer, serial number and public key.
pub(super) fn certificate(der: &[u8]) -> Result<CertificateParts<'_>, String> {
    let (cert, _) = read(der)?;
    let parts = children(cert.content)?;
    let tbs = parts
        .first()
        .filter(|e| e.tag == SEQUENCE)
        .ok_or("not a certificate")?;
    let mut fields = children(tbs.content)?.into_iter();
    let mut field = fields.next().ok_or("empty certificate")?;
    // `[0] version`, present from v2 on.
    if field.tag == context(0) {
        field = fields.next().ok_or("certificate without serial number")?;
    }
    if field.tag != INTEGER {
        return Err("certificate without serial number".into());
    }
    let serial = field.raw;
    let _signature = fields
        .next()
        .ok_or("certificate without signature algorithm")?;
    let issuer = fields.next().ok_or("certificate without issuer")?.raw;
    let _validity = fields.next().ok_or("certificate without validity")?;
    let _subject = fields.next().ok_or("certificate without subject")?;
    let spki = fields.next().ok_or("certificate without public key")?;
    let key = children(spki.content)?
        .into_iter()
        .find(|e| e.tag == BIT_STRING)
        .ok_or("certificate without public key")?;
    let public_key = key.content.get(1..).ok_or("empty public key")?;
    Ok(CertificateParts {
        issuer,
        serial,
        public_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_take_the_short_and_the_long_forms() {
        assert_eq!(tlv(OCTET_STRING, &[7; 3])[..2], [0x04, 3]);
        assert_eq!(tlv(OCTET_STRING, &[0; 127])[..2], [0x04, 0x7f]);
        assert_eq!(tlv(OCTET_STRING, &[0; 128])[..3], [0x04, 0x81, 0x80]);
        assert_eq!(tlv(OCTET_STRING, &[0; 300])[..4], [0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(tlv(OCTET_STRING, &[0; 300]).len(), 304);
    }

    #[test]
    fn integers_are_minimal_and_never_negative() {
        assert_eq!(uint(0), [0x02, 1, 0]);
        assert_eq!(uint(1), [0x02, 1, 1]);
        assert_eq!(uint(127), [0x02, 1, 0x7f]);
        assert_eq!(uint(128), [0x02, 2, 0, 0x80]);
        assert_eq!(uint(256), [0x02, 2, 1, 0]);
    }

    #[test]
    fn object_identifiers_fold_and_split_their_arcs() {
        // signedData, as every CMS document writes it.
        assert_eq!(
            oid(&[1, 2, 840, 113_549, 1, 7, 2]),
            [
                0x06, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02
            ]
        );
        // SHA-256.
        assert_eq!(
            oid(&[2, 16, 840, 1, 101, 3, 4, 2, 1]),
            [
                0x06, 9, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01
            ]
        );
    }

    #[test]
    fn a_set_is_sorted_by_encoding_and_a_time_is_utc() {
        let (a, b) = (uint(5), uint(300));
        assert_eq!(set_of(SET, &[&b, &a]), set_of(SET, &[&a, &b]));
        assert_eq!(set_of(SET, &[&b, &a])[2..5], a[..]);
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-01T16:05:09Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(utc_time(at), tlv(UTC_TIME, b"261201160509Z"));
    }

    #[test]
    fn what_is_written_reads_back() {
        let inner = sequence(&[&uint(1), &oid(&[1, 2, 3]), &tlv(OCTET_STRING, &[9; 200])]);
        let (element, rest) = read(&inner).unwrap();
        assert!(rest.is_empty());
        assert_eq!(element.tag, SEQUENCE);
        assert_eq!(element.raw, &inner[..]);
        let parts = children(element.content).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].content, &[9; 200][..]);
        assert!(read(&inner[..10]).is_err(), "cut short");
    }

    #[test]
    fn a_certificate_gives_its_issuer_serial_and_key() {
        let name = sequence(&[&set_of(
            SET,
            &[&sequence(&[&oid(&[2, 5, 4, 3]), &tlv(0x0c, b"CA")])],
        )]);
        let key = sequence(&[&uint(65_537), &uint(3)]);
        let mut bits = vec![0u8];
        bits.extend_from_slice(&key);
        let tbs = sequence(&[
            &tlv(context(0), &uint(2)),
            &uint(4660),
            &algorithm(&[1, 2, 840, 113_549, 1, 1, 11]),
            &name,
            &sequence(&[]),
            &name,
            &sequence(&[
                &algorithm(&[1, 2, 840, 113_549, 1, 1, 1]),
                &tlv(BIT_STRING, &bits),
            ]),
        ]);
        let cert = sequence(&[
            &tbs,
            &algorithm(&[1, 2, 840, 113_549, 1, 1, 11]),
            &tlv(BIT_STRING, &[0, 1]),
        ]);
        let parts = certificate(&cert).unwrap();
        assert_eq!(parts.issuer, &name[..]);
        assert_eq!(parts.serial, &uint(4660)[..]);
        assert_eq!(parts.public_key, &key[..]);
        assert!(certificate(&uint(1)).is_err());
    }
}
