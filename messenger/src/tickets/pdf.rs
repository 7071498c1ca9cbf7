//! The ticket as one A4 page of PDF: the event, its time and place, the ticket type, the
//! participant, the confirmation code in large type and its QR code drawn as filled
//! rectangles (sharp at any zoom or printer).
//!
//! Text is set in DejaVu Sans (built into the binary, see `assets/fonts/`), so Cyrillic names
//! print as well as Latin ones. Each face is embedded as a Type0 font over a CIDFontType2
//! with Identity-H encoding, subset to the glyphs the page uses, with a ToUnicode map so the
//! text can be selected, searched and extracted. There is no shaping or kerning: the names and
//! titles are Latin and Cyrillic, which read right glyph by glyph.

use super::TicketSheet;
use domain::i18n::Lang;
use flate2::Compression;
use flate2::write::ZlibEncoder;
use pdf_writer::types::{CidFontType, FontFlags, SystemInfo, UnicodeCmap};
use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
use qrcode::{Color, EcLevel, QrCode};
use std::collections::BTreeMap;
use std::io::Write;
use subsetter::GlyphRemapper;

/// DejaVu Sans, for everything but the title and the code.
static REGULAR: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
/// DejaVu Sans Bold, for the title and the code.
static BOLD: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-Bold.ttf");

/// A4 in points.
const PAGE_WIDTH: f32 = 595.28;
const PAGE_HEIGHT: f32 = 841.89;
const MARGIN: f32 = 56.0;
/// The QR code's side, its quiet zone included.
const QR_SIDE: f32 = 200.0;
/// Modules of white border the QR standard asks for.
const QUIET: usize = 4;
/// Grey of labels and small print.
const GREY: f32 = 0.38;

/// Why a sheet could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SheetError {
    /// A built-in font does not parse (never, short of a broken build).
    #[error("the built-in font {0} cannot be read: {1}")]
    Font(&'static str, String),
    /// The font could not be subset.
    #[error("cannot subset the font {0}: {1}")]
    Subset(&'static str, String),
    /// The QR value does not fit a QR code.
    #[error("cannot encode the QR code: {0}")]
    Qr(#[from] qrcode::types::QrError),
    /// Compressing a stream failed (never in memory).
    #[error("cannot compress a stream: {0}")]
    Compress(#[from] std::io::Error),
}

/// The sheet's own words.
struct Labels {
    kind: &'static str,
    holder: &'static str,
    ticket_type: &'static str,
    code: &'static str,
    foot: &'static str,
}

fn labels(lang: Lang) -> Labels {
    match lang {
        Lang::Ru => Labels {
            kind: "Электронный билет",
            holder: "Участник",
            ticket_type: "Тип билета",
            code: "Код подтверждения",
            foot: "Покажите QR-код на входе или назовите код. Билет действует один раз.",
        },
        Lang::En => Labels {
            kind: "Electronic ticket",
            holder: "Participant",
            ticket_type: "Ticket type",
            code: "Confirmation code",
            foot: "Show the QR code at the entrance or tell the code. The ticket admits once.",
        },
    }
}

/// One face in use on the page: the glyphs it sets, with the text each stands for and its
/// width, so the font is subset and described once the page is laid out.
struct FaceUse {
    file: &'static str,
    base: &'static str,
    resource: &'static [u8],
    data: &'static [u8],
    face: ttf_parser::Face<'static>,
    glyphs: GlyphRemapper,
    /// New glyph id → the characters it was set for (the ToUnicode map).
    text: BTreeMap<u16, char>,
}

impl FaceUse {
    fn new(
        file: &'static str,
        base: &'static str,
        resource: &'static [u8],
        data: &'static [u8],
    ) -> Result<FaceUse, SheetError> {
        let face =
            ttf_parser::Face::parse(data, 0).map_err(|e| SheetError::Font(file, e.to_string()))?;
        Ok(FaceUse {
            file,
            base,
            resource,
            data,
            face,
            glyphs: GlyphRemapper::new(),
            text: BTreeMap::new(),
        })
    }

    fn units(&self) -> f32 {
        f32::from(self.face.units_per_em())
    }

    fn glyph(&self, c: char) -> u16 {
        self.face.glyph_index(c).map_or(0, |g| g.0)
    }

    /// Width of `text` at `size` points.
    fn width(&self, text: &str, size: f32) -> f32 {
        let units: u32 = text
            .chars()
            .map(|c| {
                let glyph = ttf_parser::GlyphId(self.glyph(c));
                u32::from(self.face.glyph_hor_advance(glyph).unwrap_or(0))
            })
            .sum();
        units as f32 * size / self.units()
    }

    /// The two-byte codes (new glyph ids, which Identity-H takes as CIDs) of `text`,
    /// remembering what each glyph stands for.
    fn encode(&mut self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() * 2);
        for c in text.chars() {
            let glyph = self.glyph(c);
            let new = self.glyphs.remap(glyph);
            // Every letter the face lacks is drawn as glyph 0 (.notdef), which stands for none
            // of them: copied text says "unknown" rather than the first such letter.
            let stands_for = if glyph == 0 { '\u{FFFD}' } else { c };
            self.text.entry(new).or_insert(stands_for);
            out.extend_from_slice(&new.to_be_bytes());
        }
        out
    }

    /// Writes the font's objects (Type0, CIDFont, descriptor, file, ToUnicode) from `first`.
    fn write(&self, pdf: &mut Pdf, first: i32) -> Result<Ref, SheetError> {
        let [type0, cid, descriptor, file, cmap] = [0, 1, 2, 3, 4].map(|i| Ref::new(first + i));
        let scale = 1000.0 / self.units();
        // The subset's tag: six capitals of a hash of its glyphs, so two subsets of one face
        // never share a name.
        let mut hash: u32 = 2_166_136_261;
        for glyph in self.glyphs.remapped_gids() {
            for byte in glyph.to_be_bytes() {
                hash = (hash ^ u32::from(byte)).wrapping_mul(16_777_619);
            }
        }
        let tag: String = (0..6)
            .map(|i| char::from(b'A' + ((hash >> (i * 5)) % 26) as u8))
            .collect();
        let name = format!("{tag}+{}", self.base);
        let system = SystemInfo {
            registry: Str(b"Adobe"),
            ordering: Str(b"Identity"),
            supplement: 0,
        };

        pdf.type0_font(type0)
            .base_font(Name(name.as_bytes()))
            .encoding_predefined(Name(b"Identity-H"))
            .descendant_font(cid)
            .to_unicode(cmap);

        let widths: Vec<f32> = self
            .glyphs
            .remapped_gids()
            .map(|old| {
                let advance = self
                    .face
                    .glyph_hor_advance(ttf_parser::GlyphId(old))
                    .unwrap_or(0);
                f32::from(advance) * scale
            })
            .collect();
        let mut font = pdf.cid_font(cid);
        font.subtype(CidFontType::Type2)
            .base_font(Name(name.as_bytes()))
            .system_info(system)
            .font_descriptor(descriptor)
            .default_width(0.0)
            .cid_to_gid_map_predefined(Name(b"Identity"));
        font.widths().consecutive(0, widths);
        font.finish();

        let bbox = self.face.global_bounding_box();
        let weight = self.face.weight().to_number();
        pdf.font_descriptor(descriptor)
            .name(Name(name.as_bytes()))
            .flags(FontFlags::SYMBOLIC)
            .bbox(Rect::new(
                f32::from(bbox.x_min) * scale,
                f32::from(bbox.y_min) * scale,
                f32::from(bbox.x_max) * scale,
                f32::from(bbox.y_max) * scale,
            ))
            .italic_angle(0.0)
            .ascent(f32::from(self.face.ascender()) * scale)
            .descent(f32::from(self.face.descender()) * scale)
            .cap_height(
                f32::from(self.face.capital_height().unwrap_or(self.face.ascender())) * scale,
            )
            .stem_v(10.0 + 0.244 * (f32::from(weight) - 50.0))
            .font_file2(file);

        let subset = subsetter::subset(self.data, 0, &self.glyphs)
            .map_err(|e| SheetError::Subset(self.file, e.to_string()))?;
        let packed = deflate(&subset)?;
        pdf.stream(file, &packed)
            .filter(Filter::FlateDecode)
            .pair(Name(b"Length1"), subset.len() as i32);

        let mut map = UnicodeCmap::new(Name(b"Custom"), system);
        for (glyph, c) in &self.text {
            map.pair(*glyph, *c);
        }
        pdf.cmap(cmap, &map.finish())
            .name(Name(b"Custom"))
            .system_info(system);
        Ok(type0)
    }
}

fn deflate(data: &[u8]) -> Result<Vec<u8>, SheetError> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(data)?;
    Ok(encoder.finish()?)
}

/// The page being drawn: its content and the two faces.
struct Page {
    content: Content,
    regular: FaceUse,
    bold: FaceUse,
}

#[derive(Clone, Copy)]
enum Weight {
    Regular,
    Bold,
}

impl Page {
    fn face(&mut self, weight: Weight) -> &mut FaceUse {
        match weight {
            Weight::Regular => &mut self.regular,
            Weight::Bold => &mut self.bold,
        }
    }

    /// One line of text with its baseline at (`x`, `y`).
    fn text(&mut self, weight: Weight, size: f32, grey: f32, x: f32, y: f32, text: &str) {
        let face = self.face(weight);
        let resource = face.resource;
        let codes = face.encode(text);
        self.content
            .begin_text()
            .set_fill_gray(grey)
            .set_font(Name(resource), size)
            .next_line(x, y)
            .show(Str(&codes))
            .end_text();
    }

    /// `text` broken into lines of at most `width` points, at most `max` of them (the last
    /// one cut with an ellipsis when more would be needed), each `leading` below the one
    /// before from the baseline `y`; answers the baseline of the last line.
    #[allow(clippy::too_many_arguments)]
    fn paragraph(
        &mut self,
        weight: Weight,
        size: f32,
        leading: f32,
        max: usize,
        x: f32,
        y: f32,
        width: f32,
        text: &str,
    ) -> f32 {
        let lines = wrap(self.face(weight), text, size, width, max);
        let mut baseline = y;
        for (i, line) in lines.iter().enumerate() {
            baseline = y - leading * i as f32;
            self.text(weight, size, 0.0, x, baseline, line);
        }
        baseline
    }
}

/// Greedy line breaking at spaces; a word wider than the line is broken where it must be.
fn wrap(face: &FaceUse, text: &str, size: f32, width: f32, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if face.width(&candidate, size) <= width {
            line = candidate;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        // The word alone: broken by characters while too wide.
        for c in word.chars() {
            let mut longer = line.clone();
            longer.push(c);
            if !line.is_empty() && face.width(&longer, size) > width {
                lines.push(std::mem::take(&mut line));
                line.push(c);
            } else {
                line = longer;
            }
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > max {
        lines.truncate(max);
        if let Some(last) = lines.last_mut() {
            while !last.is_empty() && face.width(&format!("{last}…"), size) > width {
                last.pop();
            }
            let kept = last.trim_end().to_string();
            *last = format!("{kept}…");
        }
    }
    lines
}

/// The QR code of `value`, its quiet zone included, as filled rectangles with the lower-left
/// corner at (`x`, `y`): one rectangle per run of dark modules in a row.
fn qr(content: &mut Content, value: &str, x: f32, y: f32) -> Result<(), SheetError> {
    let code = QrCode::with_error_correction_level(value.as_bytes(), EcLevel::M)?;
    let width = code.width();
    let colors = code.to_colors();
    let module = QR_SIDE / (width + 2 * QUIET) as f32;
    content.save_state().set_fill_gray(0.0);
    for row in 0..width {
        let top = y + QR_SIDE - (QUIET + row) as f32 * module;
        let mut column = 0;
        while column < width {
            if colors[row * width + column] != Color::Dark {
                column += 1;
                continue;
            }
            let start = column;
            while column < width && colors[row * width + column] == Color::Dark {
                column += 1;
            }
            content.rect(
                x + (QUIET + start) as f32 * module,
                top - module,
                (column - start) as f32 * module,
                module,
            );
        }
    }
    content.fill_nonzero().restore_state();
    Ok(())
}

/// The ticket as a PDF file of one A4 page.
pub fn render(sheet: &TicketSheet) -> Result<Vec<u8>, SheetError> {
    let words = labels(sheet.lang);
    let mut page = Page {
        content: Content::new(),
        regular: FaceUse::new("DejaVuSans.ttf", "DejaVuSans", b"F1", REGULAR)?,
        bold: FaceUse::new("DejaVuSans-Bold.ttf", "DejaVuSans-Bold", b"F2", BOLD)?,
    };
    let left = MARGIN;
    let width = PAGE_WIDTH - 2.0 * MARGIN;

    // The event.
    let mut y = PAGE_HEIGHT - MARGIN - 10.0;
    page.text(Weight::Regular, 11.0, GREY, left, y, words.kind);
    y -= 36.0;
    y = page.paragraph(
        Weight::Bold,
        26.0,
        32.0,
        3,
        left,
        y,
        width,
        &sheet.event_title,
    );
    y -= 28.0;
    page.text(Weight::Regular, 15.0, 0.0, left, y, &sheet.starts);
    if let Some(place) = sheet.place.as_deref().filter(|p| !p.trim().is_empty()) {
        y -= 22.0;
        y = page.paragraph(Weight::Regular, 12.0, 16.0, 3, left, y, width, place);
    }
    y -= 24.0;
    page.content
        .save_state()
        .set_stroke_gray(0.75)
        .set_line_width(0.8)
        .move_to(left, y)
        .line_to(PAGE_WIDTH - MARGIN, y)
        .stroke()
        .restore_state();

    // The ticket: who, which type and the code on the left, the QR code on the right.
    let top = y - 18.0;
    let column = width - QR_SIDE - 24.0;
    qr(
        &mut page.content,
        &sheet.qr_value,
        PAGE_WIDTH - MARGIN - QR_SIDE + 16.0,
        top - QR_SIDE + 16.0,
    )?;
    let mut y = top - 14.0;
    page.text(Weight::Regular, 10.0, GREY, left, y, words.holder);
    y -= 20.0;
    y = page.paragraph(
        Weight::Regular,
        16.0,
        20.0,
        2,
        left,
        y,
        column,
        &sheet.holder,
    );
    y -= 30.0;
    page.text(Weight::Regular, 10.0, GREY, left, y, words.ticket_type);
    y -= 20.0;
    y = page.paragraph(
        Weight::Regular,
        14.0,
        18.0,
        2,
        left,
        y,
        column,
        &sheet.ticket_type,
    );
    y -= 30.0;
    page.text(Weight::Regular, 10.0, GREY, left, y, words.code);
    y -= 40.0;
    // As large as fits the column, 34 points at most.
    let natural = page.bold.width(&sheet.code, 34.0);
    let size = if natural > column {
        34.0 * column / natural
    } else {
        34.0
    };
    page.text(Weight::Bold, size, 0.0, left, y, &sheet.code);

    page.text(Weight::Regular, 10.0, GREY, left, MARGIN, words.foot);

    // The file.
    let catalog = Ref::new(1);
    let pages = Ref::new(2);
    let page_id = Ref::new(3);
    let content_id = Ref::new(4);
    let info = Ref::new(5);
    let mut pdf = Pdf::new();
    pdf.catalog(catalog)
        .pages(pages)
        .lang(TextStr(match sheet.lang {
            Lang::Ru => "ru",
            Lang::En => "en",
        }));
    pdf.pages(pages).kids([page_id]).count(1);
    let regular = page.regular.write(&mut pdf, 10)?;
    let bold = page.bold.write(&mut pdf, 20)?;
    let mut one = pdf.page(page_id);
    one.media_box(Rect::new(0.0, 0.0, PAGE_WIDTH, PAGE_HEIGHT))
        .parent(pages)
        .contents(content_id);
    let mut resources = one.resources();
    resources
        .fonts()
        .pair(Name(page.regular.resource), regular)
        .pair(Name(page.bold.resource), bold);
    resources.finish();
    one.finish();
    let content = deflate(&page.content.finish())?;
    pdf.stream(content_id, &content).filter(Filter::FlateDecode);
    let title = format!("{} — {}", sheet.event_title, sheet.code);
    pdf.document_info(info)
        .title(TextStr(&title))
        .producer(TextStr("bilet"));
    Ok(pdf.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sheet(lang: Lang) -> TicketSheet {
        TicketSheet {
            lang,
            event_title: "Вечер камерной музыки: Шостакович и Прокофьев в Большом зале".into(),
            starts: "01.12.2026 19:00 MSK".into(),
            place: Some("Москва, ул. Большая Никитская, 13/6".into()),
            ticket_type: "Партер".into(),
            holder: "Анна Ли".into(),
            code: "K7M2X9QA".into(),
            qr_value: "K7M2X9QA".into(),
        }
    }

    fn count(haystack: &[u8], needle: &[u8]) -> usize {
        haystack
            .windows(needle.len())
            .filter(|w| *w == needle)
            .count()
    }

    #[test]
    fn one_page_with_two_embedded_subset_fonts_and_their_unicode_maps() {
        let pdf = render(&sheet(Lang::Ru)).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
        assert!(pdf.ends_with(b"%%EOF") || pdf.ends_with(b"%%EOF\n"));
        // "/Type /Page" also begins "/Type /Pages".
        assert_eq!(
            count(&pdf, b"/Type /Page") - count(&pdf, b"/Type /Pages"),
            1
        );
        assert_eq!(count(&pdf, b"/Subtype /Type0"), 2);
        assert_eq!(count(&pdf, b"/Subtype /CIDFontType2"), 2);
        assert_eq!(count(&pdf, b"/Encoding /Identity-H"), 2);
        assert_eq!(count(&pdf, b"/ToUnicode"), 2);
        assert_eq!(count(&pdf, b"/FontFile2"), 2);
        assert_eq!(
            count(&pdf, b"+DejaVuSans"),
            6,
            "subset names: font, CID font, descriptor"
        );
        // Only the glyphs in use: far below the 1.4 MB of the two faces.
        assert!(pdf.len() < 60_000, "{} bytes", pdf.len());
    }

    #[test]
    fn every_character_set_maps_back_to_its_text() {
        let mut page = Page {
            content: Content::new(),
            regular: FaceUse::new("DejaVuSans.ttf", "DejaVuSans", b"F1", REGULAR).unwrap(),
            bold: FaceUse::new("DejaVuSans-Bold.ttf", "DejaVuSans-Bold", b"F2", BOLD).unwrap(),
        };
        let codes = page.regular.encode("Анна Lee");
        assert_eq!(codes.len(), 16, "two bytes a character");
        let back: String = codes
            .chunks(2)
            .map(|c| page.regular.text[&u16::from_be_bytes([c[0], c[1]])])
            .collect();
        assert_eq!(back, "Анна Lee");
        // The same letter is one glyph.
        assert_eq!(codes[2..4], codes[4..6], "н twice");
        assert_ne!(codes[0..2], [0, 0], "DejaVu has Cyrillic");
    }

    #[test]
    fn long_lines_wrap_within_the_width_and_end_in_an_ellipsis() {
        let face = FaceUse::new("DejaVuSans.ttf", "DejaVuSans", b"F1", REGULAR).unwrap();
        let title = "слово ".repeat(60);
        let lines = wrap(&face, &title, 20.0, 300.0, 3);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].ends_with('…'), "{lines:?}");
        assert!(lines.iter().all(|l| face.width(l, 20.0) <= 300.0));
        let unbroken = wrap(&face, &"Ж".repeat(80), 20.0, 300.0, 5);
        assert!(unbroken.len() > 1, "a word wider than the line is broken");
        assert_eq!(wrap(&face, "Short", 20.0, 300.0, 3), vec!["Short"]);
    }

    #[test]
    fn the_qr_code_is_drawn_as_rectangles_inside_its_square() {
        let mut content = Content::new();
        qr(&mut content, "K7M2X9QA", 100.0, 100.0).unwrap();
        let ops = String::from_utf8(content.finish().to_vec()).unwrap();
        let rects: Vec<Vec<f32>> = ops
            .lines()
            .filter(|l| l.ends_with(" re"))
            .map(|l| l.split(' ').take(4).map(|n| n.parse().unwrap()).collect())
            .collect();
        assert!(rects.len() > 20);
        for r in &rects {
            assert!(
                r[0] >= 100.0 && r[0] + r[2] <= 100.0 + QR_SIDE + 0.01,
                "{r:?}"
            );
            assert!(
                r[1] >= 100.0 && r[1] + r[3] <= 100.0 + QR_SIDE + 0.01,
                "{r:?}"
            );
        }
        // Version 1 (21 modules) and the quiet zone: the top-left finder's first row starts
        // right after the border.
        let module = QR_SIDE / 29.0;
        assert!(
            rects
                .iter()
                .any(|r| (r[0] - (100.0 + 4.0 * module)).abs() < 0.01
                    && (r[2] - 7.0 * module).abs() < 0.01)
        );
    }
}
