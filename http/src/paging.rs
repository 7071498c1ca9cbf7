//! The paging query (`page`, `size`, `sort=field,dir`) of every list endpoint. Values are
//! taken as text and validated by `domain::paging`, so `size=abc` is a field error rather
//! than a generic rejection.

use crate::error::ApiError;
use crate::extract::Query;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use domain::paging::{PageRequest, SortWhitelist};
use serde::Deserialize;

/// Raw paging parameters; resolve them against the endpoint's sort whitelist.
#[derive(Clone, Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Zero-based page number (default 0).
    #[param(value_type = Option<u32>, minimum = 0, maximum = 1000000)]
    pub page: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub size: Option<String>,
    /// `field,asc` or `field,desc` over the endpoint's sortable fields.
    pub sort: Option<String>,
}

impl PageParams {
    /// Validates the parameters for an endpoint.
    pub fn resolve(&self, whitelist: &SortWhitelist) -> Result<PageRequest, ApiError> {
        PageRequest::parse(
            self.page.as_deref(),
            self.size.as_deref(),
            self.sort.as_deref(),
            whitelist,
        )
        .map_err(ApiError::validation)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PageParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<PageParams, ApiError> {
        #[derive(Deserialize)]
        struct Raw {
            page: Option<String>,
            size: Option<String>,
            sort: Option<String>,
        }
        // Other query parameters are the endpoint's filters, read by its own extractor.
        let Query(Raw { page, size, sort }) =
            Query::<Raw>::from_request_parts(parts, state).await?;
        Ok(PageParams { page, size, sort })
    }
}
