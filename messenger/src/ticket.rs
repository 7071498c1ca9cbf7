//! The ticket image: a QR code of the check-in code, as a PNG the door's scanner reads.

use image::{GrayImage, Luma};
use qrcode::{Color, EcLevel, QrCode};
use std::io::Cursor;

/// Pixels per QR module.
const SCALE: u32 = 10;
/// Modules of white border the QR standard asks for.
const QUIET: u32 = 4;

/// Why a ticket image could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TicketError {
    /// The code does not fit a QR code.
    #[error("cannot encode the code as QR: {0}")]
    Encode(#[from] qrcode::types::QrError),
    /// PNG encoding failed.
    #[error("cannot write the PNG: {0}")]
    Png(#[from] image::ImageError),
}

/// A PNG of the QR code carrying `code`.
pub fn qr_png(code: &str) -> Result<Vec<u8>, TicketError> {
    let qr = QrCode::with_error_correction_level(code.as_bytes(), EcLevel::M)?;
    let width = qr.width() as u32;
    let colors = qr.to_colors();
    let side = (width + 2 * QUIET) * SCALE;
    let image = GrayImage::from_fn(side, side, |x, y| {
        let (mx, my) = (x / SCALE, y / SCALE);
        let inside = (QUIET..QUIET + width).contains(&mx) && (QUIET..QUIET + width).contains(&my);
        let dark = inside && colors[((my - QUIET) * width + (mx - QUIET)) as usize] == Color::Dark;
        Luma([if dark { 0 } else { 255 }])
    });
    let mut png = Vec::new();
    image.write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)?;
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ticket_is_a_square_png_with_a_quiet_border() {
        let png = qr_png("K7M2X9QA").unwrap();
        let img = image::load_from_memory(&png).unwrap().to_luma8();
        assert_eq!(img.width(), img.height());
        // Version 1 (21 modules) plus the border.
        assert_eq!(img.width(), (21 + 8) * SCALE);
        assert_eq!(img.get_pixel(0, 0).0[0], 255, "quiet zone is white");
        // The top-left finder pattern starts with a dark module right after the border.
        assert_eq!(img.get_pixel(QUIET * SCALE, QUIET * SCALE).0[0], 0);
    }
}
