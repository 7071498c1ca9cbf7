//! Image variants: the header is read first and absurd dimensions refused before anything is
//! decoded; then the image is decoded once (with allocation limits) and each variant is made
//! from the next larger one, fitted within its box, and encoded (JPEG, or PNG when the image
//! has transparency).

use domain::media::{MAX_SIDE, Variant, dimensions_allowed, fit};
use image::imageops::FilterType;
use image::{DynamicImage, ImageReader, Limits};
use std::io::Cursor;

/// A rendered variant.
pub struct Rendered {
    /// Which one.
    pub variant: Variant,
    /// Encoded bytes.
    pub bytes: Vec<u8>,
    /// Their MIME type.
    pub content_type: &'static str,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// Why an image cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum RenderError {
    /// The header cannot be read.
    Unreadable(String),
    /// The dimensions are absurd (a decompression bomb, or a broken header).
    TooLarge {
        /// Width claimed by the header.
        width: u32,
        /// Height claimed by the header.
        height: u32,
    },
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderError::Unreadable(e) => write!(f, "unreadable image: {e}"),
            RenderError::TooLarge { width, height } => {
                write!(f, "image of {width}×{height} pixels is too large")
            }
        }
    }
}

fn reader(bytes: &[u8]) -> Result<ImageReader<Cursor<&[u8]>>, RenderError> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| RenderError::Unreadable(e.to_string()))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(512 * 1024 * 1024);
    reader.limits(limits);
    Ok(reader)
}

/// The dimensions from the header, refused when absurd. Reads no pixel data.
pub fn dimensions(bytes: &[u8]) -> Result<(u32, u32), RenderError> {
    let (width, height) = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| RenderError::Unreadable(e.to_string()))?
        .into_dimensions()
        .map_err(|e| RenderError::Unreadable(e.to_string()))?;
    if !dimensions_allowed(width, height) {
        return Err(RenderError::TooLarge { width, height });
    }
    Ok((width, height))
}

/// Every resized variant of an image. CPU-bound: call it off the async threads.
pub fn variants(bytes: &[u8]) -> Result<Vec<Rendered>, RenderError> {
    let (width, height) = dimensions(bytes)?;
    let image = reader(bytes)?
        .decode()
        .map_err(|e| RenderError::Unreadable(e.to_string()))?;
    let alpha = image.color().has_alpha();
    let mut source: DynamicImage = image;
    let mut rendered = Vec::with_capacity(Variant::RESIZED.len());
    // Largest first, each from the previous one: fewer pixels to read at every step.
    for variant in Variant::RESIZED.iter().rev() {
        let side = variant.box_side().unwrap_or(u32::MAX);
        let (w, h) = fit(width, height, side);
        let resized = if (w, h) == (source.width(), source.height()) {
            source.clone()
        } else {
            source.resize_exact(w, h, FilterType::Triangle)
        };
        let (bytes, content_type) = encode(&resized, alpha)?;
        rendered.push(Rendered {
            variant: *variant,
            bytes,
            content_type,
            width: w,
            height: h,
        });
        source = resized;
    }
    rendered.reverse();
    Ok(rendered)
}

fn encode(image: &DynamicImage, alpha: bool) -> Result<(Vec<u8>, &'static str), RenderError> {
    let mut out = Cursor::new(Vec::new());
    if alpha {
        image
            .write_to(&mut out, image::ImageFormat::Png)
            .map_err(|e| RenderError::Unreadable(e.to_string()))?;
        Ok((out.into_inner(), "image/png"))
    } else {
        let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        rgb.write_with_encoder(encoder)
            .map_err(|e| RenderError::Unreadable(e.to_string()))?;
        Ok((out.into_inner(), "image/jpeg"))
    }
}
