//! Paging and sorting shared by every list endpoint: `page` (zero based), `size` (default 20,
//! at most 100) and `sort=field,dir` over a whitelist the endpoint declares.

use crate::validation::{FieldError, FieldErrors};
use serde::Serialize;

/// Default page size.
pub const DEFAULT_SIZE: u32 = 20;
/// Largest page size a client may ask for.
pub const MAX_SIZE: u32 = 100;
/// Largest page number accepted, so `page * size` can never overflow an offset.
pub const MAX_PAGE: u32 = 1_000_000;

/// Direction of a sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortDir {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

impl SortDir {
    /// The SQL keyword.
    pub fn sql(self) -> &'static str {
        match self {
            Self::Asc => "ASC",
            Self::Desc => "DESC",
        }
    }
}

/// One sortable field of a list: the name clients use and the column it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortField {
    /// camelCase name in the API.
    pub api: &'static str,
    /// The SQL expression it orders by; only whitelisted constants ever reach SQL.
    pub column: &'static str,
}

/// The sort an endpoint allows and the one it uses when none is asked for.
#[derive(Clone, Copy, Debug)]
pub struct SortWhitelist {
    /// The fields that may be sorted on.
    pub fields: &'static [SortField],
    /// The default sort.
    pub default: (&'static str, SortDir),
}

/// A validated sort: a whitelisted column and a direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    /// Whitelisted SQL column.
    pub column: &'static str,
    /// Direction.
    pub dir: SortDir,
}

impl Sort {
    /// An `ORDER BY` clause; ties are broken by `tiebreak` (a unique column) so pages never
    /// overlap.
    pub fn order_by(&self, tiebreak: &str) -> String {
        let dir = self.dir.sql();
        format!("ORDER BY {} {dir}, {tiebreak} {dir}", self.column)
    }
}

/// A validated page request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// Zero-based page number.
    pub page: u32,
    /// Rows per page.
    pub size: u32,
    /// The sort to apply.
    pub sort: Sort,
}

impl PageRequest {
    /// Validates raw query values against the endpoint's whitelist.
    pub fn parse(
        page: Option<&str>,
        size: Option<&str>,
        sort: Option<&str>,
        whitelist: &SortWhitelist,
    ) -> Result<PageRequest, FieldErrors> {
        let mut errors = FieldErrors::new();
        let page = match page.map(str::parse::<u32>) {
            None => 0,
            Some(Ok(p)) if p <= MAX_PAGE => p,
            Some(_) => {
                errors.add(
                    "page",
                    FieldError::OutOfRange {
                        min: 0,
                        max: MAX_PAGE.into(),
                    },
                );
                0
            }
        };
        let size = match size.map(str::parse::<u32>) {
            None => DEFAULT_SIZE,
            Some(Ok(s)) if (1..=MAX_SIZE).contains(&s) => s,
            Some(_) => {
                errors.add(
                    "size",
                    FieldError::OutOfRange {
                        min: 1,
                        max: MAX_SIZE.into(),
                    },
                );
                DEFAULT_SIZE
            }
        };
        let sort = match sort {
            None | Some("") => whitelist.default_sort(),
            Some(raw) => match whitelist.resolve(raw) {
                Some(sort) => sort,
                None => {
                    errors.add(
                        "sort",
                        FieldError::NotAllowed {
                            allowed: whitelist
                                .fields
                                .iter()
                                .flat_map(|f| [format!("{},asc", f.api), format!("{},desc", f.api)])
                                .collect(),
                        },
                    );
                    whitelist.default_sort()
                }
            },
        };
        errors.into_result()?;
        Ok(PageRequest { page, size, sort })
    }

    /// SQL `LIMIT`.
    pub fn limit(&self) -> i64 {
        self.size.into()
    }

    /// SQL `OFFSET`.
    pub fn offset(&self) -> i64 {
        i64::from(self.page) * i64::from(self.size)
    }
}

impl SortWhitelist {
    /// The values `resolve` takes, as an ECMA regular expression for the API document: a
    /// field, optionally `,asc` or `,desc` in any case, spaces around either; or nothing.
    pub fn pattern(&self) -> String {
        let fields: Vec<&str> = self.fields.iter().map(|f| f.api).collect();
        format!(
            r"^(\s*({})\s*(,\s*([aA][sS][cC]|[dD][eE][sS][cC])\s*)?)?$",
            fields.join("|")
        )
    }

    fn default_sort(&self) -> Sort {
        let (api, dir) = self.default;
        let column = self
            .fields
            .iter()
            .find(|f| f.api == api)
            .map(|f| f.column)
            .unwrap_or("id");
        Sort { column, dir }
    }

    fn resolve(&self, raw: &str) -> Option<Sort> {
        let (name, dir) = match raw.split_once(',') {
            Some((name, dir)) => (name.trim(), dir.trim()),
            None => (raw.trim(), "asc"),
        };
        let dir = match dir.to_ascii_lowercase().as_str() {
            "asc" => SortDir::Asc,
            "desc" => SortDir::Desc,
            _ => return None,
        };
        let field = self.fields.iter().find(|f| f.api == name)?;
        Some(Sort {
            column: field.column,
            dir,
        })
    }
}

/// One page of a list, as every list endpoint returns it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The rows of this page.
    pub data: Vec<T>,
    /// Zero-based page number.
    pub page: u32,
    /// Requested page size.
    pub size: u32,
    /// Rows over all pages.
    pub total_elements: u64,
    /// Number of pages.
    pub total_pages: u64,
    /// Whether a later page exists.
    pub has_next: bool,
    /// Whether an earlier page exists.
    pub has_previous: bool,
}

impl<T> Page<T> {
    /// Builds the page object from the rows and the total count.
    pub fn new(data: Vec<T>, request: &PageRequest, total_elements: u64) -> Self {
        let size = u64::from(request.size.max(1));
        let total_pages = total_elements.div_ceil(size);
        Page {
            data,
            page: request.page,
            size: request.size,
            total_elements,
            total_pages,
            has_next: u64::from(request.page) + 1 < total_pages,
            has_previous: request.page > 0,
        }
    }

    /// Converts the rows, keeping the paging figures.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            data: self.data.into_iter().map(f).collect(),
            page: self.page,
            size: self.size,
            total_elements: self.total_elements,
            total_pages: self.total_pages,
            has_next: self.has_next,
            has_previous: self.has_previous,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WL: SortWhitelist = SortWhitelist {
        fields: &[
            SortField {
                api: "createdAt",
                column: "created_at",
            },
            SortField {
                api: "title",
                column: "title",
            },
        ],
        default: ("createdAt", SortDir::Desc),
    };

    #[test]
    fn defaults_apply() {
        let p = PageRequest::parse(None, None, None, &WL).unwrap();
        assert_eq!((p.page, p.size), (0, 20));
        assert_eq!(p.sort.order_by("id"), "ORDER BY created_at DESC, id DESC");
    }

    #[test]
    fn sort_outside_whitelist_is_refused_not_passed_to_sql() {
        let err = PageRequest::parse(None, None, Some("password_hash,asc"), &WL).unwrap_err();
        assert!(matches!(
            err.get("sort"),
            Some(FieldError::NotAllowed { .. })
        ));
        let err = PageRequest::parse(None, None, Some("title;drop table x"), &WL).unwrap_err();
        assert!(err.get("sort").is_some());
        let ok = PageRequest::parse(None, None, Some("title,ASC"), &WL).unwrap();
        assert_eq!(ok.sort.column, "title");
    }

    #[test]
    fn size_and_page_bounds() {
        assert!(PageRequest::parse(None, Some("101"), None, &WL).is_err());
        assert!(PageRequest::parse(None, Some("0"), None, &WL).is_err());
        assert!(PageRequest::parse(Some("-1"), None, None, &WL).is_err());
        assert!(
            PageRequest::parse(Some("x"), Some("y"), None, &WL)
                .unwrap_err()
                .get("size")
                .is_some()
        );
        let p = PageRequest::parse(Some("3"), Some("100"), None, &WL).unwrap();
        assert_eq!(p.offset(), 300);
    }

    #[test]
    fn page_figures() {
        let req = PageRequest::parse(Some("1"), Some("10"), None, &WL).unwrap();
        let page = Page::new(vec![1, 2, 3], &req, 23);
        assert_eq!(page.total_pages, 3);
        assert!(page.has_next && page.has_previous);
        let last = Page::new(vec![1], &PageRequest { page: 2, ..req }, 23);
        assert!(!last.has_next);
        let empty = Page::<u8>::new(vec![], &PageRequest { page: 0, ..req }, 0);
        assert_eq!(
            (empty.total_pages, empty.has_next, empty.has_previous),
            (0, false, false)
        );
    }
}
