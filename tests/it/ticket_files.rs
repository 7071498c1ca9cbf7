//! A confirmed ticket as files for its holder (issue 32): the PDF of one A4 page whose text
//! (read back through its ToUnicode maps with poppler's `pdftotext`) carries the event, the
//! participant's Cyrillic name and the code; and the wallet passes, issued only where their
//! signing keys are configured: a Google Wallet link whose JWT verifies with the service
//! account's public key, and an Apple `.pkpass` whose manifest hashes its files and whose
//! detached PKCS#7 signature `openssl smime -verify` accepts. Anyone but the holder gets 404,
//! a ticket not confirmed 409.

use crate::identity::{Ctx, Session};
use crate::ticketing::participant;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use uuid::Uuid;

/// 2030-12-01 16:00 UTC: 19:00 on Moscow's clock.
const STARTS_AT: &str = "2030-12-01T16:00:00Z";

/// A published event in Moscow with a free and a paid ticket type: (event, free, paid).
async fn event(ctx: &Ctx, owner: &Session) -> (String, String, String) {
    let e = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Вечер камерной музыки", "startsAt": STARTS_AT, "timezone": "Europe/Moscow",
                   "locationType": "OFFLINE", "locationAddress": "Москва, Тверская, 1"}),
        )
        .await;
    assert_eq!(e.status, 201, "{}", e.body);
    let event = e.body["id"].as_str().unwrap().to_string();
    let mut types = Vec::new();
    for ticket in [
        json!({"name": "Партер", "quantity": 10}),
        json!({"name": "Ложа", "quantity": 10, "priceCents": 150000, "reservationMinutes": 30}),
    ] {
        let t = ctx
            .post(
                &format!("/api/v1/events/{event}/ticket-types"),
                Some(&owner.access),
                ticket,
            )
            .await;
        assert_eq!(t.status, 201, "{}", t.body);
        types.push(t.body["id"].as_str().unwrap().to_string());
    }
    let published = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    (event, types[0].clone(), types[1].clone())
}

/// A registration of `token`'s user as Анна Ли.
async fn register(ctx: &Ctx, token: &str, event: &str, ticket_type: &str) -> Value {
    let r = crate::support::send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(token)
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Анна", "lastName": "Ли"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

/// A GET answered with bytes: status, headers, body.
async fn download(
    ctx: &Ctx,
    path: &str,
    token: Option<&str>,
    lang: &str,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut request = ctx
        .http
        .get(format!("{}{path}", ctx.base))
        .header("Accept-Language", lang);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// A directory of its own for one test's files.
fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bilet-{name}-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a tool; its standard output on success, a failed assertion otherwise.
fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} cannot run ({e}): scripts/provision/tools.sh installs it")
        });
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

#[tokio::test]
async fn the_holder_downloads_a_one_page_pdf_of_a_confirmed_ticket_and_nobody_else_does() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, free, paid) = event(&ctx, &owner).await;
    let (_, holder) = participant();
    let confirmed = register(&ctx, &holder, &event, &free).await;
    assert_eq!(confirmed["status"], "CONFIRMED");
    let id = confirmed["id"].as_str().unwrap();
    let code = confirmed["confirmationCode"].as_str().unwrap();
    let path = format!("/api/v1/registrations/{id}/ticket.pdf");

    let dir = workdir("ticket-pdf");
    for (lang, when, label) in [
        ("ru", "01.12.2030 19:00 MSK", "Участник"),
        ("en", "1 Dec 2030, 19:00 MSK", "Participant"),
    ] {
        let (status, headers, pdf) = download(&ctx, &path, Some(&holder), lang).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&pdf));
        assert_eq!(header(&headers, "content-type"), "application/pdf");
        assert_eq!(
            header(&headers, "content-disposition"),
            format!("attachment; filename=\"ticket-{code}.pdf\"")
        );
        assert_eq!(header(&headers, "cache-control"), "private, no-store");
        assert!(pdf.starts_with(b"%PDF-"));
        // "/Type /Page" also begins "/Type /Pages".
        assert_eq!(
            count(&pdf, b"/Type /Page") - count(&pdf, b"/Type /Pages"),
            1
        );
        assert_eq!(count(&pdf, b"/ToUnicode"), 2, "both faces map back to text");
        eprintln!("ticket PDF ({lang}): {} bytes", pdf.len());
        assert!(pdf.len() < 60_000, "{} bytes", pdf.len());

        let file = format!("ticket-{lang}.pdf");
        std::fs::write(dir.join(&file), &pdf).unwrap();
        let text = run(&dir, "pdftotext", &["-layout", &file, "-"]);
        for wanted in [
            code,
            "Анна Ли",
            "Вечер камерной музыки",
            when,
            "Москва, Тверская, 1",
            "Партер",
            label,
        ] {
            assert!(
                text.contains(wanted),
                "{wanted:?} not in the PDF's text:\n{text}"
            );
        }
        let info = run(&dir, "pdfinfo", &[&file]);
        let pages = info
            .lines()
            .find_map(|l| l.strip_prefix("Pages:"))
            .map(str::trim);
        assert_eq!(pages, Some("1"), "{info}");
        assert!(info.contains("595.28 x 841.89 pts (A4)"), "{info}");
    }

    // Nobody else: another participant, the event's own organizer, no one at all.
    let (_, stranger) = participant();
    assert_eq!(download(&ctx, &path, Some(&stranger), "en").await.0, 404);
    assert_eq!(
        download(&ctx, &path, Some(&owner.access), "en").await.0,
        404
    );
    assert_eq!(download(&ctx, &path, None, "en").await.0, 401);
    let unknown = format!("/api/v1/registrations/{}/ticket.pdf", Uuid::now_v7());
    assert_eq!(download(&ctx, &unknown, Some(&holder), "en").await.0, 404);

    // A reservation still to pay has no ticket yet.
    let (_, payer) = participant();
    let reserved = register(&ctx, &payer, &event, &paid).await;
    assert_eq!(reserved["status"], "RESERVED");
    let unpaid = format!(
        "/api/v1/registrations/{}/ticket.pdf",
        reserved["id"].as_str().unwrap()
    );
    let refused = ctx.get(&unpaid, Some(&payer)).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.body["code"], "conflict");
    assert_eq!(refused.body["details"]["status"], "RESERVED");
    assert_eq!(
        refused.body["message"],
        "The ticket is available for a confirmed registration only"
    );

    // No wallet is configured: the front hides the buttons, and the passes are not found.
    let available = ctx.get("/api/v1/wallet", Some(&holder)).await;
    assert_eq!(available.status, 200, "{}", available.body);
    assert_eq!(available.body, json!({"google": false, "apple": false}));
    assert_eq!(ctx.get("/api/v1/wallet", None).await.status, 401);
    for kind in ["google", "apple"] {
        let pass = ctx
            .get(
                &format!("/api/v1/registrations/{id}/wallet/{kind}"),
                Some(&holder),
            )
            .await;
        assert_eq!(pass.status, 404, "{}", pass.body);
        assert_eq!(pass.body["details"]["wallet"], kind);
        assert_eq!(
            pass.body["message"],
            "Passes for this wallet are not issued: no signing keys are configured"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn google_wallet_links_are_signed_by_the_service_account_and_carry_the_code() {
    let dir = workdir("google-wallet");
    run(
        &dir,
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "key.pem",
        ],
    );
    run(
        &dir,
        "openssl",
        &[
            "rsa",
            "-in",
            "key.pem",
            "-RSAPublicKey_out",
            "-outform",
            "DER",
            "-out",
            "public.der",
        ],
    );
    let key = std::fs::read_to_string(dir.join("key.pem")).unwrap();
    let ctx = Ctx::with_config(|c| {
        c.wallet.google_issuer_id = "3388000000012345678".into();
        c.wallet.google_service_account = "passes@bilet-test.iam.gserviceaccount.com".into();
        c.wallet.google_private_key = domain::config::Secret::parse(key);
        c.http.public_url = "https://tickets.example.org".into();
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, free, paid) = event(&ctx, &owner).await;
    let (_, holder) = participant();
    let ticket = register(&ctx, &holder, &event, &free).await;
    let id = ticket["id"].as_str().unwrap();
    let code = ticket["confirmationCode"].as_str().unwrap();

    let available = ctx.get("/api/v1/wallet", Some(&holder)).await;
    assert_eq!(available.body, json!({"google": true, "apple": false}));

    let link = ctx
        .get(
            &format!("/api/v1/registrations/{id}/wallet/google"),
            Some(&holder),
        )
        .await;
    assert_eq!(link.status, 200, "{}", link.body);
    let url = link.body["url"].as_str().unwrap();
    let jwt = url
        .strip_prefix("https://pay.google.com/gp/v/save/")
        .unwrap_or_else(|| panic!("not a save link: {url}"));
    let public = std::fs::read(dir.join("public.der")).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_audience(&["google"]);
    validation.set_issuer(&["passes@bilet-test.iam.gserviceaccount.com"]);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    let claims = jsonwebtoken::decode::<Value>(
        jwt,
        &jsonwebtoken::DecodingKey::from_rsa_der(&public),
        &validation,
    )
    .expect("the JWT verifies with the service account's public key")
    .claims;
    assert_eq!(claims["typ"], "savetowallet");
    assert_eq!(claims["origins"], json!(["https://tickets.example.org"]));
    assert!(claims["iat"].as_i64().is_some());
    let class = &claims["payload"]["eventTicketClasses"][0];
    assert_eq!(class["id"], format!("3388000000012345678.{event}"));
    assert_eq!(
        class["eventName"]["defaultValue"]["value"],
        "Вечер камерной музыки"
    );
    assert_eq!(class["dateTime"]["start"], STARTS_AT);
    assert_eq!(
        class["venue"]["address"]["defaultValue"]["value"],
        "Москва, Тверская, 1"
    );
    let object = &claims["payload"]["eventTicketObjects"][0];
    assert_eq!(object["id"], format!("3388000000012345678.{id}"));
    assert_eq!(object["classId"], class["id"]);
    assert_eq!(object["state"], "ACTIVE");
    assert_eq!(object["barcode"]["type"], "QR_CODE");
    assert_eq!(
        object["barcode"]["value"], code,
        "the web ticket's QR value"
    );
    assert_eq!(object["ticketHolderName"], "Анна Ли");
    assert_eq!(object["ticketType"]["defaultValue"]["value"], "Партер");

    // A tampered link does not verify.
    let mut forged = jwt.to_string();
    forged.insert(forged.find('.').unwrap() + 5, 'x');
    assert!(
        jsonwebtoken::decode::<Value>(
            &forged,
            &jsonwebtoken::DecodingKey::from_rsa_der(&public),
            &validation
        )
        .is_err()
    );

    // The holder only, a confirmed ticket only; Apple is still not configured.
    let (_, stranger) = participant();
    let path = format!("/api/v1/registrations/{id}/wallet/google");
    assert_eq!(ctx.get(&path, Some(&stranger)).await.status, 404);
    assert_eq!(ctx.get(&path, None).await.status, 401);
    let (_, payer) = participant();
    let reserved = register(&ctx, &payer, &event, &paid).await;
    let unpaid = ctx
        .get(
            &format!(
                "/api/v1/registrations/{}/wallet/google",
                reserved["id"].as_str().unwrap()
            ),
            Some(&payer),
        )
        .await;
    assert_eq!(unpaid.status, 409, "{}", unpaid.body);
    let apple = ctx
        .get(
            &format!("/api/v1/registrations/{id}/wallet/apple"),
            Some(&holder),
        )
        .await;
    assert_eq!(apple.status, 404);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn apple_wallet_passes_are_signed_by_the_pass_certificate_under_its_ca() {
    let dir = workdir("apple-wallet");
    // A CA standing for Apple's WWDR, and a pass type certificate it issued.
    run(
        &dir,
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca-key.pem",
            "-out",
            "ca.pem",
            "-days",
            "30",
            "-subj",
            "/CN=Test WWDR/O=bilet test",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    run(
        &dir,
        "openssl",
        &[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "pass-key.pem",
            "-out",
            "pass.csr",
            "-subj",
            "/CN=Pass Type ID: pass.test.bilet/OU=TEAM123456/O=bilet test",
        ],
    );
    run(
        &dir,
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            "pass.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            "pass.pem",
        ],
    );
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let (certificate, wwdr, key) = (read("pass.pem"), read("ca.pem"), read("pass-key.pem"));
    let ctx = Ctx::with_config(|c| {
        c.wallet.apple_pass_type_id = "pass.test.bilet".into();
        c.wallet.apple_team_id = "TEAM123456".into();
        c.wallet.apple_certificate = certificate;
        c.wallet.apple_wwdr_certificate = wwdr;
        c.wallet.apple_private_key = domain::config::Secret::parse(key);
        c.wallet.issuer_name = "Филармония".into();
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, free, _) = event(&ctx, &owner).await;
    let (_, holder) = participant();
    let ticket = register(&ctx, &holder, &event, &free).await;
    let id = ticket["id"].as_str().unwrap();
    let code = ticket["confirmationCode"].as_str().unwrap();

    let available = ctx.get("/api/v1/wallet", Some(&holder)).await;
    assert_eq!(available.body, json!({"google": false, "apple": true}));

    let path = format!("/api/v1/registrations/{id}/wallet/apple");
    let (status, headers, pass) = download(&ctx, &path, Some(&holder), "ru").await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&pass));
    assert_eq!(
        header(&headers, "content-type"),
        "application/vnd.apple.pkpass"
    );
    assert_eq!(
        header(&headers, "content-disposition"),
        format!("attachment; filename=\"ticket-{code}.pkpass\"")
    );
    eprintln!("pkpass: {} bytes", pass.len());
    std::fs::write(dir.join("ticket.pkpass"), &pass).unwrap();
    let unpacked = dir.join("pass");
    std::fs::create_dir_all(&unpacked).unwrap();
    run(&unpacked, "unzip", &["-q", "../ticket.pkpass"]);

    let manifest: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(unpacked.join("manifest.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = manifest.keys().map(String::as_str).collect();
    assert_eq!(names, ["icon.png", "icon@2x.png", "pass.json"]);
    for (name, hash) in &manifest {
        let sum = run(&unpacked, "sha1sum", &[name]);
        assert_eq!(sum.split_whitespace().next(), Some(hash.as_str()), "{name}");
    }
    // The detached signature over the manifest verifies up to the CA.
    run(
        &unpacked,
        "openssl",
        &[
            "smime",
            "-verify",
            "-inform",
            "DER",
            "-in",
            "signature",
            "-binary",
            "-content",
            "manifest.json",
            "-CAfile",
            "../ca.pem",
            "-purpose",
            "any",
            "-out",
            "/dev/null",
        ],
    );
    // …and not over another manifest.
    std::fs::write(unpacked.join("other.json"), b"{}").unwrap();
    let forged = Command::new("openssl")
        .args([
            "smime",
            "-verify",
            "-inform",
            "DER",
            "-in",
            "signature",
            "-binary",
            "-content",
            "other.json",
            "-CAfile",
            "../ca.pem",
            "-purpose",
            "any",
            "-out",
            "/dev/null",
        ])
        .current_dir(&unpacked)
        .output()
        .unwrap();
    assert!(
        !forged.status.success(),
        "a signature for another manifest must fail"
    );

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(unpacked.join("pass.json")).unwrap())
            .unwrap();
    assert_eq!(json["formatVersion"], 1);
    assert_eq!(json["passTypeIdentifier"], "pass.test.bilet");
    assert_eq!(json["teamIdentifier"], "TEAM123456");
    assert_eq!(json["serialNumber"], id);
    assert_eq!(json["organizationName"], "Филармония");
    assert_eq!(json["relevantDate"], STARTS_AT);
    assert_eq!(json["barcodes"][0]["format"], "PKBarcodeFormatQR");
    assert_eq!(
        json["barcodes"][0]["message"], code,
        "the web ticket's QR value"
    );
    assert_eq!(json["barcodes"][0]["messageEncoding"], "iso-8859-1");
    assert_eq!(
        json["eventTicket"]["primaryFields"][0]["value"],
        "Вечер камерной музыки"
    );
    assert_eq!(
        json["eventTicket"]["headerFields"][0]["value"],
        "01.12.2030 19:00 MSK"
    );
    assert_eq!(
        json["eventTicket"]["secondaryFields"][0]["value"],
        "Анна Ли"
    );

    let (_, stranger) = participant();
    assert_eq!(download(&ctx, &path, Some(&stranger), "en").await.0, 404);
    let google = ctx
        .get(
            &format!("/api/v1/registrations/{id}/wallet/google"),
            Some(&holder),
        )
        .await;
    assert_eq!(google.status, 404);
    let _ = std::fs::remove_dir_all(dir);
}
