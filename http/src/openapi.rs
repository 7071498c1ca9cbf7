//! The OpenAPI document, generated from the handlers' annotations. Each service contributes
//! its part; the gateway serves the merged document at `/api/v1/openapi.json`.

use crate::error::ErrorBody;
use crate::health;
use axum::Json;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(title = "bilet API", version = "1", description = "Event ticketing platform. Errors use the body {code, message, details}; messages are Russian unless Accept-Language: en."),
    paths(health::live, health::ready),
    components(schemas(ErrorBody, health::Health, health::Checks, health::Status)),
    tags((name = "health", description = "Liveness and readiness"))
)]
struct Platform;

/// The merged document of every service.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = Platform::openapi();
    doc.merge(crate::identity::openapi());
    doc.merge(crate::events::openapi());
    doc.merge(crate::media::openapi());
    doc.merge(crate::analytics::openapi());
    doc.merge(crate::notifications::openapi());
    doc.components
        .get_or_insert_with(Default::default)
        .security_schemes
        .insert(
            "bearer".into(),
            utoipa::openapi::security::SecurityScheme::Http(
                utoipa::openapi::security::HttpBuilder::new()
                    .scheme(utoipa::openapi::security::HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    // Routes for other services only are not the clients' to call.
    doc.paths
        .paths
        .retain(|path, _| !crate::gateway::is_internal(&fill_parameters(path)));
    common_answers(&mut doc);
    sort_values(&mut doc);
    doc
}

/// The sorts each list takes, from the whitelist its handler resolves `sort` against.
fn sort_whitelists() -> [(&'static str, &'static domain::paging::SortWhitelist); 11] {
    use storage::events::{catalog, registrations};
    use storage::identity::{groups, invites, members, organizations, requests};
    [
        ("/api/v1/events", &catalog::SORT),
        ("/api/v1/events/{id}/registrations", &registrations::SORT),
        ("/api/v1/registrations", &registrations::SORT),
        (
            "/api/v1/events/{id}/ticket-types",
            &crate::events::ticket_types::SORT,
        ),
        ("/api/v1/organization-requests", &requests::SORT),
        ("/api/v1/organizations", &organizations::SORT),
        ("/api/v1/organizations/{id}/members", &members::SORT),
        ("/api/v1/organizations/{id}/groups", &groups::SORT),
        ("/api/v1/organizations/{id}/invites", &invites::SORT),
        ("/api/v1/groups/{id}/members", &groups::MEMBER_SORT),
        (
            "/api/v1/notifications/templates",
            &crate::notifications::TEMPLATE_SORT,
        ),
    ]
}

/// States the values of each list's `sort` parameter (the shared paging parameters cannot).
fn sort_values(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ObjectBuilder, RefOr, Schema, Type};
    for (path, whitelist) in sort_whitelists() {
        let Some(op) = doc
            .paths
            .paths
            .get_mut(path)
            .and_then(|item| item.get.as_mut())
        else {
            continue;
        };
        for parameter in op.parameters.iter_mut().flatten() {
            if parameter.name == "sort" {
                parameter.schema = Some(RefOr::T(Schema::Object(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some(whitelist.pattern()))
                        .build(),
                )));
            }
        }
    }
}

/// Adds what every operation may answer besides its own statuses, so the document tells every
/// status a route gives: the gateway's rate limit (429) and an unavailable or moving service
/// (503 with Retry-After) anywhere; 400 where there is a parameter or a body to get wrong;
/// 404 where the path names something; 413 and 415 where there is a body; 401 and the bearer
/// requirement where the gateway asks for a token.
fn common_answers(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::Operation;
    use utoipa::openapi::security::SecurityRequirement;
    let error = || {
        utoipa::openapi::ContentBuilder::new()
            .schema(Some(utoipa::openapi::Ref::from_schema_name("ErrorBody")))
            .build()
    };
    let answer = |op: &mut Operation, status: &str, description: &str| {
        op.responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| {
                utoipa::openapi::ResponseBuilder::new()
                    .description(description)
                    .content("application/json", error())
                    .build()
                    .into()
            });
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let names_something = path.contains('{');
        // The gateway's rule decides what is public; a path parameter stands for an id.
        let concrete = fill_parameters(path);
        let item_has_parameters = item.parameters.as_ref().is_some_and(|p| !p.is_empty());
        let operations = [
            (axum::http::Method::GET, item.get.as_mut()),
            (axum::http::Method::PUT, item.put.as_mut()),
            (axum::http::Method::POST, item.post.as_mut()),
            (axum::http::Method::DELETE, item.delete.as_mut()),
        ];
        for (method, op) in operations {
            let Some(op) = op else { continue };
            let has_body = op.request_body.is_some();
            let has_parameters =
                item_has_parameters || op.parameters.as_ref().is_some_and(|p| !p.is_empty());
            if has_parameters || has_body || names_something {
                answer(
                    op,
                    "400",
                    "Bad input: a malformed parameter or body (validation_error, by field)",
                );
            }
            if names_something {
                answer(op, "404", "Not found, or not visible to the caller");
            }
            if has_body {
                answer(op, "413", "The body is larger than allowed");
                answer(op, "415", "The body is not of the documented content type");
            }
            if crate::gateway::is_public(&method, &concrete) {
                op.security = None;
            } else {
                answer(op, "401", "No valid access token");
                op.security = Some(vec![SecurityRequirement::new(
                    "bearer",
                    Vec::<String>::new(),
                )]);
            }
            answer(op, "429", "Too many requests: see Retry-After");
            answer(
                op,
                "503",
                "A service or the database is unavailable, or the event is moving to another node: retry after Retry-After",
            );
        }
    }
}

/// `path` with each `{parameter}` replaced by an id, as a request would carry it.
fn fill_parameters(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 32);
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push_str("00000000-0000-0000-0000-000000000000");
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// `GET /api/v1/openapi.json`.
pub async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation<'a>(
        doc: &'a utoipa::openapi::OpenApi,
        path: &str,
        method: utoipa::openapi::path::HttpMethod,
    ) -> &'a utoipa::openapi::path::Operation {
        doc.paths
            .get_path_operation(path, method)
            .unwrap_or_else(|| panic!("{path} is documented"))
    }

    fn statuses(op: &utoipa::openapi::path::Operation) -> Vec<&str> {
        op.responses.responses.keys().map(String::as_str).collect()
    }

    #[test]
    fn every_operation_tells_the_answers_any_route_may_give() {
        use utoipa::openapi::path::HttpMethod::{Get, Post};
        let doc = document();
        // A token-only read with a path id: bad id, unknown id, no token, limits.
        let event = operation(&doc, "/api/v1/events/{id}/registrations", Get);
        for status in ["400", "401", "404", "429", "503"] {
            assert!(statuses(event).contains(&status), "{status}");
        }
        assert!(event.security.is_some(), "the bearer token is required");
        // A public sign-in with a body: no 401 of its own making, and no token asked.
        let login = operation(&doc, "/api/v1/auth/login", Post);
        for status in ["400", "413", "415", "429", "503"] {
            assert!(statuses(login).contains(&status), "{status}");
        }
        assert!(login.security.is_none(), "public");
        assert!(
            operation(&doc, "/api/v1/events/by-slug/{slug}", Get)
                .security
                .is_none(),
            "public"
        );
        // What only services call is not in the clients' document.
        assert!(!doc.paths.paths.contains_key("/api/v1/notifications/send"));
    }

    #[test]
    fn every_list_states_the_sorts_it_takes() {
        let doc = document();
        for (path, whitelist) in sort_whitelists() {
            let op = operation(&doc, path, utoipa::openapi::path::HttpMethod::Get);
            let sort = op
                .parameters
                .iter()
                .flatten()
                .find(|p| p.name == "sort")
                .unwrap_or_else(|| panic!("{path} takes sort"));
            let schema = serde_json::to_value(&sort.schema).unwrap();
            assert_eq!(schema["pattern"], whitelist.pattern(), "{path}");
        }
    }

    #[test]
    fn a_parameter_stands_for_an_id() {
        assert_eq!(
            fill_parameters("/api/v1/events/{id}/ticket-types/{type_id}"),
            "/api/v1/events/00000000-0000-0000-0000-000000000000/ticket-types/00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(fill_parameters("/api/v1/events"), "/api/v1/events");
    }
}
