//! Media rules: which files are accepted (sniffed from their bytes), how large, the image
//! variants and their boxes, the status of a file, what may be attached to what, signed local
//! links and the cleanup hour.

pub mod attachable;
pub mod links;
pub mod refusals;

use chrono::{Duration, NaiveTime};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Largest image accepted (5 MB).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Largest PDF accepted (10 MB).
pub const MAX_PDF_BYTES: usize = 10 * 1024 * 1024;
/// Images with more pixels than this are refused before decoding (decompression bombs).
pub const MAX_PIXELS: u64 = 50_000_000;
/// Images wider or taller than this are refused before decoding.
pub const MAX_SIDE: u32 = 16_384;
/// How long a signed link stays valid.
pub const LINK_TTL: Duration = Duration::hours(1);
/// Unattached files older than this are removed by the cleanup.
pub const UNATTACHED_TTL: Duration = Duration::hours(24);

/// A format bilet accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    /// JPEG image.
    Jpeg,
    /// PNG image.
    Png,
    /// WebP image.
    Webp,
    /// GIF image.
    Gif,
    /// PDF document.
    Pdf,
}

impl Format {
    /// Finds the format from the first bytes of a file; the name and the declared type are
    /// not trusted.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Format::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Format::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Format::Webp)
        } else if bytes.starts_with(b"%PDF-") {
            Some(Format::Pdf)
        } else {
            None
        }
    }

    /// The MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            Format::Jpeg => "image/jpeg",
            Format::Png => "image/png",
            Format::Webp => "image/webp",
            Format::Gif => "image/gif",
            Format::Pdf => "application/pdf",
        }
    }

    /// File name extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Jpeg => "jpg",
            Format::Png => "png",
            Format::Webp => "webp",
            Format::Gif => "gif",
            Format::Pdf => "pdf",
        }
    }

    /// Images get variants; documents do not.
    pub fn is_image(self) -> bool {
        self != Format::Pdf
    }

    /// The largest accepted size.
    pub fn max_bytes(self) -> usize {
        if self.is_image() {
            MAX_IMAGE_BYTES
        } else {
            MAX_PDF_BYTES
        }
    }
}

/// Why an upload is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadRefusal {
    /// Zero bytes.
    Empty,
    /// Not one of the accepted formats.
    Unsupported,
    /// The declared type says something else than the bytes.
    Mismatch {
        /// What the bytes are.
        sniffed: Format,
    },
    /// Over the format's limit.
    TooLarge {
        /// The limit in bytes.
        max: usize,
    },
}

/// Judges an upload from its bytes and the declared content type (if any).
pub fn check_upload(bytes: &[u8], declared: Option<&str>) -> Result<Format, UploadRefusal> {
    if bytes.is_empty() {
        return Err(UploadRefusal::Empty);
    }
    let format = Format::sniff(bytes).ok_or(UploadRefusal::Unsupported)?;
    if let Some(declared) = declared.map(|d| d.split(';').next().unwrap_or("").trim()) {
        // A client that does not know the type may say so; anything else must agree.
        let unknown =
            declared.is_empty() || declared.eq_ignore_ascii_case("application/octet-stream");
        let same = declared.eq_ignore_ascii_case(format.mime())
            || (format == Format::Jpeg && declared.eq_ignore_ascii_case("image/jpg"));
        if !unknown && !same {
            return Err(UploadRefusal::Mismatch { sniffed: format });
        }
    }
    if bytes.len() > format.max_bytes() {
        return Err(UploadRefusal::TooLarge {
            max: format.max_bytes(),
        });
    }
    Ok(format)
}

/// Whether image dimensions are sane enough to decode.
pub fn dimensions_allowed(width: u32, height: u32) -> bool {
    width > 0
        && height > 0
        && width <= MAX_SIDE
        && height <= MAX_SIDE
        && u64::from(width) * u64::from(height) <= MAX_PIXELS
}

/// Status of a media file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MediaStatus {
    /// The bytes are being stored.
    Uploading,
    /// Stored; variants are being made.
    Processing,
    /// Stored with all its variants.
    Ready,
    /// Removed (by its owner or the cleanup).
    Deleted,
}

impl MediaStatus {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Uploading => "UPLOADING",
            Self::Processing => "PROCESSING",
            Self::Ready => "READY",
            Self::Deleted => "DELETED",
        }
    }
}

impl FromStr for MediaStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "UPLOADING" => Self::Uploading,
            "PROCESSING" => Self::Processing,
            "READY" => Self::Ready,
            "DELETED" => Self::Deleted,
            _ => return Err(()),
        })
    }
}

/// A stored rendition of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Variant {
    /// The uploaded bytes.
    Original,
    /// Within 150×150.
    Thumbnail,
    /// Within 300×300.
    Small,
    /// Within 600×600.
    Medium,
    /// Within 1200×1200.
    Large,
}

impl Variant {
    /// The resized variants, smallest first.
    pub const RESIZED: [Variant; 4] = [
        Variant::Thumbnail,
        Variant::Small,
        Variant::Medium,
        Variant::Large,
    ];

    /// The side of the square box the variant fits in.
    pub fn box_side(self) -> Option<u32> {
        match self {
            Variant::Original => None,
            Variant::Thumbnail => Some(150),
            Variant::Small => Some(300),
            Variant::Medium => Some(600),
            Variant::Large => Some(1200),
        }
    }

    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Original => "ORIGINAL",
            Variant::Thumbnail => "THUMBNAIL",
            Variant::Small => "SMALL",
            Variant::Medium => "MEDIUM",
            Variant::Large => "LARGE",
        }
    }
}

impl FromStr for Variant {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "ORIGINAL" => Variant::Original,
            "THUMBNAIL" => Variant::Thumbnail,
            "SMALL" => Variant::Small,
            "MEDIUM" => Variant::Medium,
            "LARGE" => Variant::Large,
            _ => return Err(()),
        })
    }
}

/// The size of an image fitted within a `side`×`side` box, proportions kept; images already
/// inside the box keep their size (never enlarged).
pub fn fit(width: u32, height: u32, side: u32) -> (u32, u32) {
    if width <= side && height <= side {
        return (width, height);
    }
    let scale = f64::from(side) / f64::from(width.max(height));
    let w = (f64::from(width) * scale).round().max(1.0) as u32;
    let h = (f64::from(height) * scale).round().max(1.0) as u32;
    (w.min(side), h.min(side))
}

/// The entity a file is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Attachment {
    /// An event's cover image.
    EventCover,
    /// An organization's logo.
    OrganizationLogo,
    /// A user's avatar.
    UserAvatar,
}

impl Attachment {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EventCover => "EVENT_COVER",
            Self::OrganizationLogo => "ORGANIZATION_LOGO",
            Self::UserAvatar => "USER_AVATAR",
        }
    }
}

impl FromStr for Attachment {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "EVENT_COVER" => Self::EventCover,
            "ORGANIZATION_LOGO" => Self::OrganizationLogo,
            "USER_AVATAR" => Self::UserAvatar,
            _ => return Err(()),
        })
    }
}

/// When the daily cleanup of unattached files runs, in UTC.
pub const CLEANUP_AT: NaiveTime = match NaiveTime::from_hms_opt(3, 0, 0) {
    Some(t) => t,
    // Not reached: 03:00:00 is a valid time of day.
    None => NaiveTime::MIN,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
        b.extend_from_slice(&[0; 16]);
        b
    }

    #[test]
    fn formats_are_sniffed_from_bytes() {
        assert_eq!(Format::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(Format::Jpeg));
        assert_eq!(Format::sniff(&png()), Some(Format::Png));
        assert_eq!(Format::sniff(b"GIF89a...."), Some(Format::Gif));
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Format::Webp));
        assert_eq!(Format::sniff(b"%PDF-1.7"), Some(Format::Pdf));
        assert_eq!(Format::sniff(b"<svg></svg>"), None);
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WAVE"), None);
    }

    #[test]
    fn uploads_are_judged_by_their_bytes() {
        assert_eq!(
            check_upload(b"", Some("image/png")),
            Err(UploadRefusal::Empty)
        );
        assert_eq!(
            check_upload(b"hello", None),
            Err(UploadRefusal::Unsupported)
        );
        assert_eq!(
            check_upload(&png(), Some("image/jpeg")),
            Err(UploadRefusal::Mismatch {
                sniffed: Format::Png
            })
        );
        assert_eq!(
            check_upload(&png(), Some("image/png; x=1")),
            Ok(Format::Png)
        );
        assert_eq!(
            check_upload(&png(), Some("application/octet-stream")),
            Ok(Format::Png)
        );
        assert_eq!(check_upload(&png(), None), Ok(Format::Png));
        let mut big = png();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert_eq!(
            check_upload(&big, None),
            Err(UploadRefusal::TooLarge {
                max: MAX_IMAGE_BYTES
            })
        );
        let mut pdf = b"%PDF-1.4".to_vec();
        pdf.resize(MAX_IMAGE_BYTES + 1, b' ');
        assert_eq!(check_upload(&pdf, Some("application/pdf")), Ok(Format::Pdf));
    }

    #[test]
    fn variants_fit_their_box_and_never_grow() {
        assert_eq!(fit(4000, 3000, 150), (150, 113));
        assert_eq!(fit(3000, 4000, 600), (450, 600));
        assert_eq!(fit(100, 80, 1200), (100, 80));
        assert_eq!(fit(5000, 1, 150), (150, 1));
        assert_eq!(fit(1200, 1200, 1200), (1200, 1200));
    }

    #[test]
    fn absurd_dimensions_are_refused() {
        assert!(dimensions_allowed(6000, 4000));
        assert!(!dimensions_allowed(50_000, 50_000));
        assert!(!dimensions_allowed(16_385, 10));
        assert!(!dimensions_allowed(0, 10));
    }

    #[test]
    fn cleanup_runs_at_three() {
        assert_eq!(CLEANUP_AT, NaiveTime::from_hms_opt(3, 0, 0).unwrap());
    }
}
