//! Tests of `oauth.rs`.

use super::*;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::json;

const SEP: &str = "\u{1}";
/// 2023-11-14T22:13:20Z; every test uses fixed times.
const NOW_MS: u64 = 1_700_000_000_000;
const NOW_S: i64 = 1_700_000_000;

// ------------------------------------------------------------------ client initial response
// Ported from Kafka's OAuthBearerClientInitialResponseTest: testBuildClientResponseToBytes,
// testBuildServerResponseToBytes, testThrowsSaslExceptionOnInvalidExtensionKey, testToken,
// testAuthorizationId, testExtensions, testRfc7688Example, testCharSupportForRfc6750Token,
// testNoExtensionsFromByteArray, testNoExtensionsFromTokenAndNullExtensions,
// testValidateNullExtensions.

fn extensions(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn test_build_client_response_to_bytes() {
    let response = ClientInitialResponse::new(
        "123.345.567".to_owned(),
        None,
        extensions(&[("nineteen", "42")]),
    )
    .expect("valid extensions");
    assert_eq!(
        String::from_utf8(response.to_bytes()).expect("ascii"),
        format!("n,,{SEP}auth=Bearer 123.345.567{SEP}nineteen=42{SEP}{SEP}")
    );
}

#[test]
fn test_build_server_response_to_bytes() {
    let message = format!("n,,{SEP}auth=Bearer 123.345.567{SEP}nineteen=42{SEP}{SEP}");
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.to_bytes(), message.as_bytes());
}

#[test]
fn test_throws_sasl_exception_on_invalid_extension_key() {
    let result =
        ClientInitialResponse::new("123.345.567".to_owned(), None, extensions(&[("19", "42")]));
    assert!(matches!(result, Err(OAuthError::InvalidExtensionName { name }) if name == "19"));
    let result = ClientInitialResponse::new("t".to_owned(), None, extensions(&[("auth", "x")]));
    assert!(matches!(result, Err(OAuthError::InvalidExtensionName { name }) if name == "auth"));
    let result =
        ClientInitialResponse::new("t".to_owned(), None, extensions(&[("ok", "bad\u{1}")]));
    assert!(matches!(result, Err(OAuthError::InvalidExtensionValue { name }) if name == "ok"));
}

#[test]
fn test_token() {
    let message = format!("n,,{SEP}auth=Bearer 123.345.567{SEP}{SEP}");
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "123.345.567");
    assert_eq!(response.authorization_id, None);
}

#[test]
fn test_authorization_id() {
    let message = format!("n,a=myuser,{SEP}auth=Bearer 345{SEP}{SEP}");
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "345");
    assert_eq!(response.authorization_id.as_deref(), Some("myuser"));
}

#[test]
fn test_extensions() {
    let message =
        format!("n,,{SEP}propA=valueA1, valueA2{SEP}auth=Bearer 567{SEP}propB=valueB{SEP}{SEP}");
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "567");
    assert_eq!(response.authorization_id, None);
    assert_eq!(
        response.extensions,
        extensions(&[("propA", "valueA1, valueA2"), ("propB", "valueB")])
    );
}

#[test]
fn test_rfc7688_example() {
    let message = format!(
        "n,a=user@example.com,{SEP}host=server.example.com{SEP}port=143{SEP}auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg{SEP}{SEP}"
    );
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg");
    assert_eq!(response.authorization_id.as_deref(), Some("user@example.com"));
    assert_eq!(response.extensions, extensions(&[("host", "server.example.com"), ("port", "143")]));
}

#[test]
fn test_char_support_for_rfc6750_token() {
    let message = format!(
        "n,a=user@example.com,{SEP}host=server.example.com{SEP}port=143{SEP}auth=Bearer vF-9.df_t4qm~Tc2Nvb3RlckBhbHR+hdmlzdGEuY29/tCg=={SEP}{SEP}"
    );
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "vF-9.df_t4qm~Tc2Nvb3RlckBhbHR+hdmlzdGEuY29/tCg==");
    assert_eq!(response.authorization_id.as_deref(), Some("user@example.com"));
    assert_eq!(response.extensions, extensions(&[("host", "server.example.com"), ("port", "143")]));
}

#[test]
fn test_no_extensions_from_byte_array() {
    let message = format!(
        "n,a=user@example.com,{SEP}auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg{SEP}{SEP}"
    );
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg");
    assert_eq!(response.authorization_id.as_deref(), Some("user@example.com"));
    assert!(response.extensions.is_empty());
}

#[test]
fn test_no_extensions_from_token_and_null_extensions() {
    let response =
        ClientInitialResponse::new("token".to_owned(), None, BTreeMap::new()).expect("valid");
    assert!(response.extensions.is_empty());
    let response =
        ClientInitialResponse::new("token".to_owned(), Some(String::new()), BTreeMap::new())
            .expect("valid");
    assert_eq!(response.authorization_id, None, "an empty authzid means none, as in Kafka");
}

#[test]
fn test_validate_null_extensions() {
    validate_extensions(&BTreeMap::new()).expect("no extensions are valid");
}

#[test]
fn client_first_message_rejections() {
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "invalid oauthbearer client first message"),
        (format!("y,,{SEP}auth=Bearer t{SEP}{SEP}"), "invalid oauthbearer client first message"),
        (format!("p=x,,{SEP}auth=Bearer t{SEP}{SEP}"), "invalid oauthbearer client first message"),
        (format!("n,a=,{SEP}auth=Bearer t{SEP}{SEP}"), "invalid oauthbearer client first message"),
        (
            format!("n,a=a,b,{SEP}auth=Bearer t{SEP}{SEP}"),
            "invalid oauthbearer client first message",
        ),
        (format!("n,,{SEP}auth=Bearer t{SEP}"), "invalid oauthbearer client first message"),
        (
            format!("n,,{SEP}19=42{SEP}auth=Bearer t{SEP}{SEP}"),
            "invalid oauthbearer client first message",
        ),
        (
            format!("n,,{SEP}k=v\u{0}{SEP}auth=Bearer t{SEP}{SEP}"),
            "invalid oauthbearer client first message",
        ),
        (
            format!("n,,{SEP}host=h{SEP}{SEP}"),
            "invalid oauthbearer client first message: 'auth' not specified",
        ),
        (
            format!("n,,{SEP}{SEP}"),
            "invalid oauthbearer client first message: 'auth' not specified",
        ),
        (
            format!("n,,{SEP}auth=Bearer{SEP}{SEP}"),
            "invalid oauthbearer client first message: invalid 'auth' format",
        ),
        (
            format!("n,,{SEP}auth=Bearer a=b{SEP}{SEP}"),
            "invalid oauthbearer client first message: invalid 'auth' format",
        ),
        (
            format!("n,,{SEP}auth=Basic abc{SEP}{SEP}"),
            "invalid scheme in oauthbearer client first message: Basic",
        ),
    ];
    for (message, expected) in cases {
        let error = parse_client_initial_response(message.as_bytes()).expect_err("must be refused");
        assert_eq!(error.to_string(), expected, "message {message:?}");
    }
    let error =
        parse_client_initial_response(b"n,,\x01auth=Bearer \xff\x01\x01").expect_err("not utf-8");
    assert!(matches!(error, OAuthError::InvalidClientFirstMessage));
}

#[test]
fn client_first_message_edge_cases() {
    // The scheme is case-insensitive, duplicate keys keep the last value, values may hold '='.
    let message = format!("n,a=u=2Cx,{SEP}k=1{SEP}AUTH=x{SEP}auth=bEaReR tok{SEP}k=a=b{SEP}{SEP}");
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    assert_eq!(response.token, "tok");
    assert_eq!(response.authorization_id.as_deref(), Some("u=2Cx"));
    assert_eq!(response.extensions, extensions(&[("AUTH", "x"), ("k", "a=b")]));
}

#[test]
fn client_initial_response_debug_redacts_token() {
    let message = format!("n,,{SEP}auth=Bearer sekrit.token.value{SEP}{SEP}");
    let response = parse_client_initial_response(message.as_bytes()).expect("valid message");
    let debug = format!("{response:?}");
    assert!(!debug.contains("sekrit"), "{debug}");
    assert!(debug.contains("<redacted>"), "{debug}");
}

// ------------------------------------------------------------------ unsecured JWS
// Ported from Kafka's OAuthBearerUnsecuredJwsTest: validClaims, validCompactSerialization,
// missingPrincipal, blankPrincipalName.

fn b64(json: &str) -> String {
    URL_SAFE_NO_PAD.encode(json.as_bytes())
}

fn unsecured_token(claims_json: &str) -> String {
    format!("{}.{}.", b64(r#"{"alg":"none"}"#), b64(claims_json))
}

/// Kafka's `OAuthBearerUnsecuredJwsTest.compactSerialization`.
fn compact_serialization(
    subject: Option<&str>,
    iat: Option<i64>,
    exp: Option<i64>,
    scope: Option<&[&str]>,
) -> String {
    let mut members = Vec::new();
    if let Some(subject) = subject {
        members.push(format!("\"sub\":\"{subject}\""));
    }
    if let Some(iat) = iat {
        members.push(format!("\"iat\":{iat}"));
    }
    if let Some(exp) = exp {
        members.push(format!("\"exp\":{exp}"));
    }
    if let Some(scope) = scope {
        let items: Vec<String> = scope.iter().map(|s| format!("\"{s}\"")).collect();
        members.push(format!("\"scope\":[{}]", items.join(",")));
    }
    unsecured_token(&format!("{{{}}}", members.join(",")))
}

#[test]
fn valid_claims() {
    let token = unsecured_token(r#"{"sub":"SUBJECT","iat":100.1,"exp":300.3}"#);
    let jws = UnsecuredJws::parse(&token, "sub", "scope").expect("valid jws");
    assert_eq!(jws.header.len(), 1);
    assert_eq!(jws.header.get("alg"), Some(&Claim::Text("none".to_owned())));
    assert_eq!(jws.claims.get("exp"), Some(&Claim::Number(300.3)));
    assert_eq!(jws.claims.get("iat"), Some(&Claim::Number(100.1)));
    assert_eq!(jws.claims.get("sub"), Some(&Claim::Text("SUBJECT".to_owned())));
    assert_eq!(jws.principal_name, "SUBJECT");
    assert_eq!(jws.lifetime_ms, 300_300);
    assert_eq!(jws.start_time_ms, Some(100_100));
}

#[test]
fn valid_compact_serialization() {
    let (iat, exp) = (100, 100 + 60 * 60);
    let token = compact_serialization(
        Some("foo"),
        Some(iat),
        Some(exp),
        Some(&["scopeValue1", "scopeValue2"]),
    );
    let jws = UnsecuredJws::parse(&token, "sub", "scope").expect("valid jws");
    assert_eq!(jws.header.len(), 1);
    assert_eq!(jws.claims.len(), 4);
    assert_eq!(jws.principal_name, "foo");
    assert_eq!(jws.lifetime_ms, exp * 1000);
    assert_eq!(
        jws.claims.get("scope"),
        Some(&Claim::List(vec!["scopeValue1".to_owned(), "scopeValue2".to_owned()]))
    );
    assert_eq!(jws.scope, BTreeSet::from(["scopeValue1".to_owned(), "scopeValue2".to_owned()]));
}

#[test]
fn missing_principal() {
    let token = compact_serialization(None, Some(100), None, Some(&["scopeValue1", "scopeValue2"]));
    assert!(UnsecuredJws::parse(&token, "sub", "scope").is_err());
    let token = compact_serialization(None, Some(100), Some(200), None);
    assert_eq!(
        UnsecuredJws::parse(&token, "sub", "scope").expect_err("no sub"),
        "no principal name in jwt claim: sub"
    );
}

#[test]
fn blank_principal_name() {
    let token =
        compact_serialization(Some("   "), Some(100), Some(100 + 3600), Some(&["scopeValue1"]));
    assert_eq!(
        UnsecuredJws::parse(&token, "sub", "scope").expect_err("blank sub"),
        "no principal name in jwt claim: sub"
    );
}

#[test]
fn unsecured_jws_rejections() {
    let claims = b64(r#"{"sub":"u","exp":10}"#);
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{}.{claims}..", b64(r#"{"alg":"none"}"#)),
            "malformed compact serialization contains '..'",
        ),
        (
            format!("{}.{claims}", b64(r#"{"alg":"none"}"#)),
            "unsecured jws compact serializations must have 3 dot-separated base64url-encoded values",
        ),
        (
            format!("{}.{claims}.a.b", b64(r#"{"alg":"none"}"#)),
            "unsecured jws compact serializations must have 3 dot-separated base64url-encoded values",
        ),
        (
            format!("{}.{claims}.", b64(r#"{"alg":"RS256"}"#)),
            "unsecured jws must have 'none' for an algorithm",
        ),
        (
            format!("{}.{claims}.", b64(r#"{"typ":"JWT"}"#)),
            "jws header must have an algorithm value",
        ),
        (
            format!("{}.{claims}.AB", b64(r#"{"alg":"none"}"#)),
            "unsecured jws must not contain a digital signature",
        ),
        (format!("{}.{claims}.", "!!!"), "malformed base64 url encoded value"),
        (format!("{}.{claims}.", b64("{not json")), "malformed json"),
        (unsecured_token(r#"{"sub":"u"}"#), "no expiration time in jwt"),
        (
            unsecured_token(r#"{"sub":"u","exp":"10"}"#),
            "the 'exp' claim was not of type Number: String",
        ),
        (
            unsecured_token(r#"{"sub":1,"exp":10}"#),
            "the 'sub' claim was not of type String: Number",
        ),
        (
            unsecured_token(r#"{"sub":"u","exp":10,"scope":5}"#),
            "the 'scope' claim was not of type List: Number",
        ),
        (
            unsecured_token(r#"{"sub":"u","exp":10,"iat":"x"}"#),
            "the 'iat' claim was not of type Number: String",
        ),
    ];
    for (token, expected) in cases {
        assert_eq!(
            UnsecuredJws::parse(&token, "sub", "scope").expect_err("refused"),
            expected,
            "{token}"
        );
    }
}

#[test]
fn unsecured_jws_scope_forms() {
    let jws = UnsecuredJws::parse(
        &unsecured_token(r#"{"sub":"u","exp":10,"scope":" a b "}"#),
        "sub",
        "scope",
    )
    .expect("valid");
    assert_eq!(
        jws.scope,
        BTreeSet::from(["a b".to_owned()]),
        "a string scope is one item, trimmed"
    );
    let jws = UnsecuredJws::parse(
        &unsecured_token(r#"{"sub":"u","exp":10,"scope":"  "}"#),
        "sub",
        "scope",
    )
    .expect("valid");
    assert!(jws.scope.is_empty());
    let jws = UnsecuredJws::parse(
        &unsecured_token(r#"{"sub":"u","exp":10,"scope":[" x ","", "x", 7]}"#),
        "sub",
        "scope",
    )
    .expect("valid");
    assert_eq!(jws.scope, BTreeSet::from(["7".to_owned(), "x".to_owned()]));
    // Standard base64 (Kafka's decoder) is accepted as well as base64url.
    let standard = format!(
        "{}.{}.",
        base64::engine::general_purpose::STANDARD.encode(br#"{"alg":"none"}"#),
        base64::engine::general_purpose::STANDARD.encode(br#"{"sub":"u","exp":10}"#)
    );
    assert_eq!(UnsecuredJws::parse(&standard, "sub", "scope").expect("valid").principal_name, "u");
}

// ------------------------------------------------------------------ validation utils
// Ported from Kafka's OAuthBearerValidationUtilsTest: validateClaimForExistenceAndType,
// validateIssuedAt, validateExpirationTime, validateExpirationTimeAndIssuedAtConsistency,
// validateScope (with a fixed time instead of Time.SYSTEM).

fn jws(claims_json: &str) -> UnsecuredJws {
    UnsecuredJws::parse(&unsecured_token(claims_json), "sub", "scope").expect("valid jws")
}

#[test]
fn validate_claim_for_existence_and_type_table() {
    for exists in [None, Some(true), Some(false)] {
        for required in [true, false] {
            let extra = match exists {
                None => r#","foo":1"#,
                Some(true) => r#","foo":"foo""#,
                Some(false) => "",
            };
            let jws = jws(&format!(r#"{{"exp":100,"sub":"principalName"{extra}}}"#));
            let result =
                validate_claim_for_existence_and_type(&jws, required, "foo", ClaimType::String);
            let should_fail = exists.is_none() || (required && exists == Some(false));
            assert_eq!(result.is_err(), should_fail, "exists {exists:?} required {required}");
        }
    }
}

#[test]
fn validate_issued_at_table() {
    let now_claim = NOW_MS / 1000;
    for exists in [true, false] {
        let iat = if exists { format!(r#","iat":{now_claim}"#) } else { String::new() };
        let jws = jws(&format!(r#"{{"exp":{now_claim},"sub":"principalName"{iat}}}"#));
        for required in [true, false] {
            for skew in [0_u64, 5, 10, 20] {
                for offset in [-10_i64, 0, 10] {
                    let when = NOW_MS.checked_add_signed(offset).expect("in range");
                    let result = validate_issued_at(&jws, required, when, skew);
                    let should_fail =
                        if exists { now_claim * 1000 > when + skew } else { required };
                    assert_eq!(
                        result.is_err(),
                        should_fail,
                        "exists {exists} required {required} skew {skew} offset {offset}"
                    );
                }
            }
        }
    }
}

#[test]
fn validate_expiration_time_table() {
    let now_claim = NOW_MS / 1000;
    let jws = jws(&format!(r#"{{"exp":{now_claim},"sub":"principalName"}}"#));
    for skew in [0_u64, 5, 10, 20] {
        for offset in [-10_i64, 0, 10] {
            let when = NOW_MS.checked_add_signed(offset).expect("in range");
            let result = validate_expiration_time(&jws, when, skew);
            let expired = i128::from(when) - i128::from(skew) >= i128::from(now_claim * 1000);
            assert_eq!(result.is_err(), expired, "skew {skew} offset {offset}");
        }
    }
    let error = validate_expiration_time(&jws, NOW_MS, 0).expect_err("expired at exp");
    assert_eq!(
        error,
        "the indicated time (1700000000000 ms) minus allowable clock skew (0 ms) was on or after the expiration time value (1700000000.000000 seconds)"
    );
}

#[test]
fn validate_expiration_time_and_issued_at_consistency() {
    let now_claim = NOW_S;
    let jws_no_iat = jws(&format!(r#"{{"exp":{now_claim},"sub":"principalName"}}"#));
    assert!(validate_time_consistency(&jws_no_iat).is_ok());
    for offset in -1..=1 {
        let jws = jws(&format!(
            r#"{{"iat":{now_claim},"exp":{},"sub":"principalName"}}"#,
            now_claim + offset
        ));
        assert_eq!(validate_time_consistency(&jws).is_err(), offset <= 0, "offset {offset}");
    }
}

#[test]
fn validate_scope_table() {
    let no_scope: &[&str] = &[];
    let scope1: &[&str] = &["scope1"];
    let scope1_and_2: &[&str] = &["scope1", "scope2"];
    for actual in [None, Some(no_scope), Some(scope1), Some(scope1_and_2)] {
        for required in [None, Some(no_scope), Some(scope1), Some(scope1_and_2)] {
            let jws = UnsecuredJws::parse(
                &compact_serialization(Some("principalName"), None, Some(NOW_S), actual),
                "sub",
                "scope",
            )
            .expect("valid jws");
            let required_scope: Vec<String> =
                required.unwrap_or_default().iter().map(|s| (*s).to_owned()).collect();
            let result = validate_scope(&jws.scope, &required_scope);
            let should_fail = !required_scope.is_empty()
                && actual.unwrap_or_default().len() < required_scope.len();
            match result {
                Ok(()) => assert!(!should_fail, "actual {actual:?} required {required:?}"),
                Err(OAuthError::InsufficientScope { required_scope: failure_scope, .. }) => {
                    assert!(should_fail, "actual {actual:?} required {required:?}");
                    assert!(!failure_scope.is_empty());
                }
                Err(other) => panic!("unexpected error {other}"),
            }
        }
    }
}

// ------------------------------------------------------------------ unsecured validator
// Ported from Kafka's OAuthBearerUnsecuredValidatorCallbackHandlerTest: validToken,
// badOrMissingPrincipal, tooEarlyExpirationTime, includesRequiredScope, missingRequiredScope.

const LIFETIME_SECONDS_TO_USE: u64 = 1000 * 60 * 60;

fn options(pairs: &[(&str, &str)]) -> UnsecuredOptions {
    UnsecuredOptions::from_jaas_options(&extensions(pairs)).expect("valid options")
}

fn no_scope_required() -> UnsecuredOptions {
    options(&[(PRINCIPAL_CLAIM_NAME_OPTION, "principal"), (ALLOWABLE_CLOCK_SKEW_MS_OPTION, "1")])
}

fn exp_claim_text(lifetime_seconds: u64) -> String {
    format!("\"exp\":{}", NOW_MS / 1000 + lifetime_seconds)
}

#[test]
fn valid_token() {
    for include_iat in [true, false] {
        let iat = if include_iat { format!(",\"iat\":{}", NOW_MS / 1000) } else { String::new() };
        let claims = format!(
            "{{\"principal\":\"username\",{}{iat}}}",
            exp_claim_text(LIFETIME_SECONDS_TO_USE)
        );
        let validator = TokenValidator::Unsecured(no_scope_required());
        let token = validator.validate(&unsecured_token(&claims), NOW_MS).expect("valid token");
        assert_eq!(
            token,
            ValidatedToken {
                principal_name: "username".to_owned(),
                lifetime_ms: NOW_MS + LIFETIME_SECONDS_TO_USE * 1000,
                scope: Vec::new(),
            }
        );
    }
}

#[test]
fn bad_or_missing_principal() {
    for exists in [true, false] {
        let bad = if exists { ",\"principal\":1" } else { "" };
        let claims = format!("{{{}{bad}}}", exp_claim_text(LIFETIME_SECONDS_TO_USE));
        let result = TokenValidator::Unsecured(no_scope_required())
            .validate(&unsecured_token(&claims), NOW_MS);
        assert!(matches!(result, Err(OAuthError::InvalidToken { .. })), "{result:?}");
    }
}

#[test]
fn too_early_expiration_time() {
    let claims =
        format!("{{\"principal\":\"username\",\"iat\":{},{}}}", NOW_MS / 1000, exp_claim_text(0));
    let result =
        TokenValidator::Unsecured(no_scope_required()).validate(&unsecured_token(&claims), NOW_MS);
    assert!(matches!(result, Err(OAuthError::InvalidToken { .. })), "{result:?}");
}

#[test]
fn includes_required_scope() {
    let claims = format!(
        "{{\"sub\":\"username\",{},\"scope\":\"scope1\"}}",
        exp_claim_text(LIFETIME_SECONDS_TO_USE)
    );
    let validator = TokenValidator::Unsecured(options(&[(REQUIRED_SCOPE_OPTION, "scope1")]));
    let token = validator.validate(&unsecured_token(&claims), NOW_MS).expect("valid token");
    assert_eq!(token.scope, vec!["scope1".to_owned()]);
}

#[test]
fn missing_required_scope() {
    let claims = format!(
        "{{\"sub\":\"username\",{},\"scope\":\"scope1\"}}",
        exp_claim_text(LIFETIME_SECONDS_TO_USE)
    );
    let validator = TokenValidator::Unsecured(options(&[(REQUIRED_SCOPE_OPTION, "scope1 scope2")]));
    let error = validator.validate(&unsecured_token(&claims), NOW_MS).expect_err("missing scope2");
    let OAuthError::InsufficientScope { required_scope, .. } = &error else { panic!("{error:?}") };
    assert_eq!(required_scope, "[scope1, scope2]");
    assert_eq!(error.challenge_status(), Some(("insufficient_scope", Some("[scope1, scope2]"))));
}

#[test]
fn unsecured_clock_skew_and_iat_in_future() {
    let validator = TokenValidator::Unsecured(options(&[(ALLOWABLE_CLOCK_SKEW_MS_OPTION, "500")]));
    let token = unsecured_token(&format!("{{\"sub\":\"u\",\"exp\":{NOW_S}}}"));
    // exp == now: expired without skew, accepted within 500 ms of skew, refused at 500 ms.
    assert!(
        TokenValidator::Unsecured(UnsecuredOptions::default()).validate(&token, NOW_MS).is_err()
    );
    assert_eq!(validator.validate(&token, NOW_MS + 499).expect("within skew").lifetime_ms, NOW_MS);
    assert!(validator.validate(&token, NOW_MS + 500).is_err());
    let future_iat = unsecured_token(&format!(
        "{{\"sub\":\"u\",\"iat\":{},\"exp\":{}}}",
        NOW_S + 1,
        NOW_S + 100
    ));
    let error = validator.validate(&future_iat, NOW_MS).expect_err("iat in the future");
    assert!(error.to_string().contains("issued at value"), "{error}");
}

#[test]
fn unsecured_options_parsing() {
    assert_eq!(
        UnsecuredOptions::from_jaas_options(&BTreeMap::new()).expect("defaults"),
        UnsecuredOptions::default()
    );
    let parsed = options(&[
        (PRINCIPAL_CLAIM_NAME_OPTION, "  "),
        (SCOPE_CLAIM_NAME_OPTION, " scp "),
        (REQUIRED_SCOPE_OPTION, " a  b "),
        (ALLOWABLE_CLOCK_SKEW_MS_OPTION, " 7 "),
    ]);
    assert_eq!(
        parsed,
        UnsecuredOptions {
            principal_claim_name: "sub".to_owned(),
            scope_claim_name: "scp".to_owned(),
            required_scope: vec!["a".to_owned(), "b".to_owned()],
            allowable_clock_skew_ms: 7,
        }
    );
    for (key, value, expected) in [
        (
            ALLOWABLE_CLOCK_SKEW_MS_OPTION,
            "-1",
            "invalid oauthbearer option unsecuredValidatorAllowableClockSkewMs: allowable clock skew millis must not be negative: -1",
        ),
        (
            ALLOWABLE_CLOCK_SKEW_MS_OPTION,
            "x",
            "invalid oauthbearer option unsecuredValidatorAllowableClockSkewMs: for input string: \"x\"",
        ),
        (
            REQUIRED_SCOPE_OPTION,
            "ok bad\"",
            "invalid oauthbearer option unsecuredValidatorRequiredScope: invalid scope value: bad\"",
        ),
    ] {
        let error =
            UnsecuredOptions::from_jaas_options(&extensions(&[(key, value)])).expect_err("invalid");
        assert_eq!(error.to_string(), expected);
    }
}

// ------------------------------------------------------------------ SASL server
// Ported from Kafka's OAuthBearerSaslServerTest: noAuthorizationIdSpecified,
// negotiatedProperty, savesCustomExtensionAsNegotiatedProperty,
// authorizationIdEqualsAuthenticationId, authorizationIdNotEqualsAuthenticationId,
// illegalToken. Not ported: unrecognizedExtensionsAreNotSaved and
// throwsAuthenticationExceptionOnInvalidExtensions, which need a custom extensions callback
// handler (seglog's validators accept every extension, as Kafka's built-in handlers do).

const USER: &str = "user";

/// What Kafka's `OAuthBearerUnsecuredLoginCallbackHandler` makes with
/// `unsecuredLoginStringClaim_sub="user"`: iat now, exp one hour later.
fn login_token() -> String {
    unsecured_token(&format!(
        "{{\"iat\":{}.0,\"exp\":{}.0,\"sub\":\"{USER}\"}}",
        NOW_S,
        NOW_S + 3600
    ))
}

fn client_initial_response(
    authorization_id: Option<&str>,
    illegal_token: bool,
    ext: &[(&str, &str)],
) -> Vec<u8> {
    let token = format!("{}{}", login_token(), if illegal_token { "AB" } else { "" });
    ClientInitialResponse::new(token, authorization_id.map(str::to_owned), extensions(ext))
        .expect("valid extensions")
        .to_bytes()
}

fn unsecured() -> TokenValidator {
    TokenValidator::Unsecured(UnsecuredOptions::default())
}

#[test]
fn no_authorization_id_specified() {
    let mut server = OAuthBearerServer::new();
    let step = server
        .evaluate(&client_initial_response(None, false, &[]), &unsecured(), NOW_MS)
        .expect("complete");
    assert_eq!(
        step,
        OAuthStep::Complete { principal_name: USER.to_owned(), lifetime_ms: NOW_MS + 3_600_000 }
    );
    assert!(server.is_complete());
}

#[test]
fn negotiated_property() {
    let mut server = OAuthBearerServer::new();
    let step = server
        .evaluate(&client_initial_response(Some(USER), false, &[]), &unsecured(), NOW_MS)
        .expect("complete");
    let token = server.validated_token().expect("token after completion");
    assert_eq!(
        step,
        OAuthStep::Complete {
            principal_name: token.principal_name.clone(),
            lifetime_ms: token.lifetime_ms
        }
    );
    assert_eq!(token.lifetime_ms, NOW_MS + 3_600_000);
}

#[test]
fn saves_custom_extension_as_negotiated_property() {
    let mut server = OAuthBearerServer::new();
    let message =
        client_initial_response(None, false, &[("firstKey", "value1"), ("secondKey", "value2")]);
    server.evaluate(&message, &unsecured(), NOW_MS).expect("complete");
    assert_eq!(
        server.extensions(),
        Some(&extensions(&[("firstKey", "value1"), ("secondKey", "value2")]))
    );
}

#[test]
fn authorization_id_equals_authentication_id() {
    let mut server = OAuthBearerServer::new();
    let step =
        server.evaluate(&client_initial_response(Some(USER), false, &[]), &unsecured(), NOW_MS);
    assert!(matches!(step, Ok(OAuthStep::Complete { .. })), "{step:?}");
}

#[test]
fn authorization_id_not_equals_authentication_id() {
    let mut server = OAuthBearerServer::new();
    let error = server
        .evaluate(&client_initial_response(Some("userx"), false, &[]), &unsecured(), NOW_MS)
        .expect_err("authzid differs");
    assert_eq!(
        error.client_message().as_deref(),
        Some(
            "Authentication failed: Client requested an authorization id (userx) that is different from the token's principal name (user)"
        )
    );
    assert!(!server.is_complete());
    assert!(matches!(
        server.evaluate(b"\x01", &unsecured(), NOW_MS),
        Err(OAuthError::AlreadyFailed)
    ));
}

#[test]
fn illegal_token() {
    let mut server = OAuthBearerServer::new();
    let step = server
        .evaluate(&client_initial_response(None, true, &[]), &unsecured(), NOW_MS)
        .expect("challenge");
    assert_eq!(step, OAuthStep::Challenge(br#"{"status":"invalid_token"}"#.to_vec()));
    assert!(!server.is_complete());
}

#[test]
fn client_ack_after_challenge_fails_with_kafka_message() {
    let mut server = OAuthBearerServer::new();
    server
        .evaluate(&client_initial_response(None, true, &[]), &unsecured(), NOW_MS)
        .expect("challenge");
    let error = server.evaluate(b"\x01", &unsecured(), NOW_MS).expect_err("ack fails the exchange");
    let OAuthError::FailedAfterChallenge { challenge } = &error else { panic!("{error:?}") };
    assert_eq!(challenge, r#"{"status":"invalid_token"}"#);
    assert_eq!(error.client_message().as_deref(), Some(r#"{"status":"invalid_token"}"#));
    assert!(matches!(
        server.evaluate(b"\x01", &unsecured(), NOW_MS),
        Err(OAuthError::AlreadyFailed)
    ));
}

#[test]
fn other_message_after_challenge_is_an_error() {
    let mut server = OAuthBearerServer::new();
    server
        .evaluate(&client_initial_response(None, true, &[]), &unsecured(), NOW_MS)
        .expect("challenge");
    let error = server
        .evaluate(&client_initial_response(None, false, &[]), &unsecured(), NOW_MS)
        .expect_err("a second initial response is refused");
    assert!(matches!(error, OAuthError::UnexpectedMessageAfterChallenge));
    assert_eq!(error.client_message(), None);
}

#[test]
fn insufficient_scope_challenge_bytes() {
    let validator = TokenValidator::Unsecured(options(&[(REQUIRED_SCOPE_OPTION, "scope1 scope2")]));
    let mut server = OAuthBearerServer::new();
    let step = server
        .evaluate(&client_initial_response(None, false, &[]), &validator, NOW_MS)
        .expect("challenge");
    assert_eq!(
        step,
        OAuthStep::Challenge(
            br#"{"status":"insufficient_scope", "scope":"[scope1, scope2]"}"#.to_vec()
        )
    );
}

#[test]
fn json_error_response_matches_kafka() {
    assert_eq!(json_error_response("invalid_token", None, None), r#"{"status":"invalid_token"}"#);
    assert_eq!(
        json_error_response(
            "invalid_token",
            Some("[a]"),
            Some("https://x/.well-known/openid-configuration")
        ),
        r#"{"status":"invalid_token", "scope":"[a]", "openid-configuration":"https://x/.well-known/openid-configuration"}"#
    );
}

#[test]
fn server_edge_cases() {
    let mut server = OAuthBearerServer::new();
    // %x01 with no challenge pending is just a malformed first message (as in Kafka).
    assert!(matches!(
        server.evaluate(b"\x01", &unsecured(), NOW_MS),
        Err(OAuthError::InvalidClientFirstMessage)
    ));
    let mut server = OAuthBearerServer::new();
    server
        .evaluate(&client_initial_response(None, false, &[]), &unsecured(), NOW_MS)
        .expect("complete");
    assert!(matches!(
        server.evaluate(b"\x01", &unsecured(), NOW_MS),
        Err(OAuthError::AlreadyComplete)
    ));
    assert!(server.is_complete(), "a stray message does not undo completion");
    // An expired token is a challenge, not an error.
    let mut server = OAuthBearerServer::new();
    let step = server.evaluate(
        &client_initial_response(None, false, &[]),
        &unsecured(),
        NOW_MS + 3_600_000,
    );
    assert_eq!(
        step.expect("challenge"),
        OAuthStep::Challenge(br#"{"status":"invalid_token"}"#.to_vec())
    );
}

#[test]
fn errors_never_show_the_token() {
    let secret = "c2VjcmV0LXRva2Vu.c2VjcmV0LXRva2Vu.c2VjcmV0LXRva2Vu";
    let message = format!("n,a=someone,{SEP}auth=Bearer {secret}{SEP}{SEP}");
    for validator in [unsecured(), TokenValidator::Jwks(jwks_validator(None, &[]))] {
        let mut server = OAuthBearerServer::new();
        let step = server.evaluate(message.as_bytes(), &validator, NOW_MS).expect("challenge");
        let OAuthStep::Challenge(bytes) = step else { panic!("expected a challenge") };
        assert!(!String::from_utf8_lossy(&bytes).contains("c2VjcmV0"));
        let error = validator.validate(secret, NOW_MS).expect_err("refused");
        assert!(!error.to_string().contains("c2VjcmV0"), "{error}");
        assert!(!format!("{error:?}").contains("c2VjcmV0"), "{error:?}");
        assert!(!format!("{server:?}").contains("c2VjcmV0"));
    }
}

// ------------------------------------------------------------------ JWKS validator
// Ported from Kafka's AccessTokenValidatorTest (testEmptyString, testWhitespace,
// testEmptySections, testMissingHeader, testMissingPayload, testMissingSignature) and
// ValidatorAccessTokenValidatorTest (testRsaEncryptionAlgorithm, testEcdsaEncryptionAlgorithm,
// testInvalidEncryptionAlgorithm, testMissingSubShouldBeValid); the rest are seglog's own.

/// Test-only RSA key (PKCS#1), generated once with `openssl genrsa 2048` for these tests.
const TEST_RSA_PRIVATE_KEY_PEM: &str = "-----BEGIN RSA PRIVATE KEY-----
MIIEpQIBAAKCAQEA0koXKW5WAzIR8gzzA9N5QeHv1qBsxxsTgAF0X1F14WsmP6J6
EzMOmyi3tX52swpblTvwAhSpu/fntASqLbX0gLkaPviJQn0wNa1tUF/t72K5EwQO
gNBkqHqNt0HFoU1dJZatMmisl2lggOm3i876jzrIPCX27wFPIXLx0r8c/eP/Cjd+
4BB8mDvsha8fSF+9j8h97JaxPjSDHdQjiLKFMOBTg5NMNpEA2DRS/1l7bfeRgswH
XI/9t4Vtx7AsW+W/+5zSeSlkg0HWVGD38FLwthsDbwV/zQBMEq4BzGyLq2gSBjOp
W1Dt0x5Sjp1Hs3F8RvA9dkgd46FQhZ00o0JFQwIDAQABAoIBADNU1ZmN7t4B02KX
6Zwl+2PrIG3uJA9oGxb0g/Eeg91eF+yRnyXfoTGbu1hIwfXLUfa4Nkpzu8j/5yXI
u7fDwibHyFHVvj+mKmX36wajHAQCv7WWGGo2NFPx8nToz7KjnVinEqkK5xJgrSda
payxffUHfsg75i6KTcQW+FOexhdtJjZkfYQ0leo1ooNP0Xf1g4FwCe7pbA3GXCvV
NebEXWwiLb1xoy44GzEWw/kdKrx7n1pT8el87EPzBijUpNl9nvtfY90b62FPp5Sl
nKqmn5eF6CgNe/gBGYOhM6m1hHMnx41t2w7QWBbGgTCgyH8hoccA9q8NQDqYIJd+
SURVPEECgYEA8zrhaeBctKtW5dh8NjuzA35ZRGh8e4Y4/ISe/Ccmmop75gNFtqLq
yZsBkmiaPE48yYTPwhGfPbdl5GMeyhCBEGdl9L2RQeaO2lFS8QtPJ+KMBjvYdnzg
MrDYBNSCfSDkJBe3nOfFP9le2OGRBfqADQ4Bbdy0886RLox6/44i4wMCgYEA3VR5
TAc+7cQ9Tu2/ZlpHdKBDmpqexm0Xml/dVA91HClnNMlO9WDF0nfbKWAKTwctENH/
b3HD3/vIKUrKgINYtVsgoHu1MBtFN41q1h9tYY9XBHc3X6eYDbh+dTJWJrGvkJ4f
GSuuEg2lQ4V5YDNYG6OgK/EscJmKwcOjo7CcYMECgYEAswJNreeDMzC65rRaTmvH
hzWxKyifHSYewLI2dCu4PJrZLuKPpyfmFnRvRrqXcPS/xixp31Gq2fglFF5i5aIZ
6uG+Zs4xnse5sTGTEnYZTqhsF5Zp7GJhes0uXvesBb10Sp/t8ZueTyyCoqn4WucO
4QzCvoFl593KefDIAVcxk9MCgYEA3Ivlhq4dtd37XaApPnutgniEhRWYK4/fmjP2
n2H7x4E2V3JV3Mt+tHg8imEqRI+ZB47KYynRDmudjA/7881uYuEYhPJgnTw/X9jq
Yc3VOAcWpduJ8SZWrS1vzabIFCyxDoGR6YoOHe09BiiFxyfCn2AQJllfeCB4FRa3
BFDjssECgYEAj4+UABESjvTWqgxXu5ILsgF2J29BZqKS3q48omL9WjonsP4X/9xw
YcqF8ZwT3xu74AQKxwETytcVPD09x1v1aPmFkgnzDiWOc9MMlxn0jNIhYY1+E0bO
WnPxQ/57k8upyC4qfxRz0aO1wXSqaB4qWuIjFk8zluK1WWF7OXHkrGE=
-----END RSA PRIVATE KEY-----";
/// The public half of [`TEST_RSA_PRIVATE_KEY_PEM`]: the JWK's `n` (`e` is `AQAB`).
const TEST_RSA_N: &str = "0koXKW5WAzIR8gzzA9N5QeHv1qBsxxsTgAF0X1F14WsmP6J6EzMOmyi3tX52swpblTvwAhSpu_fntASqLbX0gLkaPviJQn0wNa1tUF_t72K5EwQOgNBkqHqNt0HFoU1dJZatMmisl2lggOm3i876jzrIPCX27wFPIXLx0r8c_eP_Cjd-4BB8mDvsha8fSF-9j8h97JaxPjSDHdQjiLKFMOBTg5NMNpEA2DRS_1l7bfeRgswHXI_9t4Vtx7AsW-W_-5zSeSlkg0HWVGD38FLwthsDbwV_zQBMEq4BzGyLq2gSBjOpW1Dt0x5Sjp1Hs3F8RvA9dkgd46FQhZ00o0JFQw";
/// Test-only EC P-256 key (PKCS#8), generated once with `openssl ecparam -name prime256v1`.
const TEST_EC_PRIVATE_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0Osr+gDXn78VJG1Q
s1cYDeYfJb2BQIjx1V+XH1Hr0qShRANCAAR4eGH865ic8hl25Bloy4MYJfFoFKtW
y6vSiZs7+/38Jj+jzgAy1KUsL9mLtPjXP4yD+iEa+WoCvNu5ILEaad8u
-----END PRIVATE KEY-----";
const TEST_EC_X: &str = "eHhh_OuYnPIZduQZaMuDGCXxaBSrVsur0ombO_v9_CY";
const TEST_EC_Y: &str = "P6POADLUpSwv2Yu0-Nc_jIP6IRr5agK827kgsRpp3y4";

const ISSUER: &str = "https://issuer.example.com";

fn pem_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(body).expect("test pem is base64")
}

fn jwks_json() -> String {
    json!({"keys": [
        {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
        {"kty": "RSA", "kid": "rsa-enc", "use": "enc", "n": TEST_RSA_N, "e": "AQAB"},
        {"kty": "RSA", "kid": "rsa1", "use": "sig", "alg": "RS256", "n": TEST_RSA_N, "e": "AQAB"},
        {"kty": "EC", "kid": "ec1", "crv": "P-256", "x": TEST_EC_X, "y": TEST_EC_Y},
    ]})
    .to_string()
}

fn jwks_validator(expected_issuer: Option<&str>, expected_audience: &[&str]) -> JwksValidator {
    JwksValidator::from_file(
        &jwks_json(),
        expected_issuer.map(str::to_owned),
        expected_audience.iter().map(|a| (*a).to_owned()).collect(),
        DEFAULT_SUB_CLAIM_NAME.to_owned(),
        DEFAULT_SCOPE_CLAIM_NAME.to_owned(),
        DEFAULT_CLOCK_SKEW_SECONDS,
    )
    .expect("valid jwks")
}

fn claims() -> Value {
    json!({"sub": "alice", "iss": ISSUER, "iat": NOW_S - 60, "exp": NOW_S + 3600, "scope": "read"})
}

fn sign(alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_der(&pem_der(TEST_EC_PRIVATE_KEY_PEM)),
        _ => EncodingKey::from_rsa_der(&pem_der(TEST_RSA_PRIVATE_KEY_PEM)),
    };
    jsonwebtoken::encode(&header, claims, &key).expect("test token signs")
}

fn rs256(claims: &Value) -> String {
    sign(Algorithm::RS256, Some("rsa1"), claims)
}

fn reason(result: Result<ValidatedToken, OAuthError>) -> String {
    match result {
        Err(OAuthError::InvalidToken { reason }) => reason,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

#[test]
fn jwks_file_keeps_usable_keys() {
    let validator = jwks_validator(None, &[]);
    assert_eq!(validator.key_count(), 2, "oct and use=enc keys are skipped");
    let debug = format!("{validator:?}");
    assert!(debug.contains("rsa1") && debug.contains("ec1"), "{debug}");
}

#[test]
fn jwks_valid_rs256_token() {
    let validator = TokenValidator::Jwks(jwks_validator(Some(ISSUER), &[]));
    let token = validator.validate(&rs256(&claims()), NOW_MS).expect("valid token");
    assert_eq!(
        token,
        ValidatedToken {
            principal_name: "alice".to_owned(),
            lifetime_ms: (NOW_MS / 1000 + 3600) * 1000,
            scope: vec!["read".to_owned()],
        }
    );
    // Through the exchange, with a matching authzid.
    let message =
        ClientInitialResponse::new(rs256(&claims()), Some("alice".to_owned()), BTreeMap::new())
            .expect("valid")
            .to_bytes();
    let step = OAuthBearerServer::new().evaluate(&message, &validator, NOW_MS).expect("complete");
    assert_eq!(
        step,
        OAuthStep::Complete { principal_name: "alice".to_owned(), lifetime_ms: NOW_MS + 3_600_000 }
    );
}

#[test]
fn test_rsa_encryption_algorithm() {
    // A token without kid picks the first key whose type fits the algorithm.
    let token = sign(Algorithm::RS256, None, &claims());
    let validated = jwks_validator(None, &[]).validate(&token, NOW_MS).expect("valid");
    assert_eq!(validated.principal_name, "alice");
    assert_eq!(validated.scope.len(), 1);
}

#[test]
fn test_ecdsa_encryption_algorithm() {
    let token = sign(Algorithm::ES256, Some("ec1"), &claims());
    let validated = jwks_validator(None, &[]).validate(&token, NOW_MS).expect("valid");
    assert_eq!(validated.principal_name, "alice");
    assert_eq!(validated.lifetime_ms, NOW_MS + 3_600_000);
    assert_eq!(validated.scope.len(), 1);
}

#[test]
fn test_invalid_encryption_algorithm() {
    let token = format!("{}.{}.c2ln", b64(r#"{"alg":"fake"}"#), b64(&claims().to_string()));
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
        "\"fake\" is an unknown, unsupported or unavailable alg algorithm"
    );
}

#[test]
fn test_missing_sub_should_be_valid() {
    let validator = JwksValidator::from_file(
        &jwks_json(),
        None,
        Vec::new(),
        "client_id".to_owned(),
        "scope".to_owned(),
        30,
    )
    .expect("valid jwks");
    let token = rs256(&json!({"client_id": "otherSub", "iat": NOW_S, "exp": NOW_S + 60}));
    let validated = validator.validate(&token, NOW_MS).expect("valid");
    assert_eq!(validated.principal_name, "otherSub");
    assert!(validated.scope.is_empty());
}

#[test]
fn jwks_wrong_signature() {
    let token = rs256(&claims());
    let mut parts: Vec<&str> = token.split('.').collect();
    let forged =
        b64(&json!({"sub": "mallory", "iss": ISSUER, "iat": NOW_S, "exp": NOW_S + 3600})
            .to_string());
    parts[1] = &forged;
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&parts.join("."), NOW_MS)),
        "jws signature verification failed"
    );
    // A signature that is not base64url at all.
    let garbled = format!("{}.{}.***", parts[0], b64(&claims().to_string()));
    assert!(
        reason(jwks_validator(None, &[]).validate(&garbled, NOW_MS))
            .starts_with("jws signature could not be verified")
    );
    // An RS256 token presented as signed by the EC key's kid finds no key.
    let wrong_family = sign(Algorithm::RS256, Some("ec1"), &claims());
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&wrong_family, NOW_MS)),
        "no key in the jwks file matches the token's kid (\"ec1\") and alg (RS256)"
    );
}

#[test]
fn jwks_wrong_kid() {
    let token = sign(Algorithm::RS256, Some("other"), &claims());
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
        "no key in the jwks file matches the token's kid (\"other\") and alg (RS256)"
    );
    // The key's own alg restricts it: rsa1 is RS256 only.
    let token = sign(Algorithm::RS384, Some("rsa1"), &claims());
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
        "no key in the jwks file matches the token's kid (\"rsa1\") and alg (RS384)"
    );
}

#[test]
fn jwks_expired_with_and_without_skew() {
    let mut expired = claims();
    expired["exp"] = json!(NOW_S - 10);
    let token = rs256(&expired);
    // 10 s past exp is inside the default 30 s of skew.
    assert_eq!(
        jwks_validator(None, &[]).validate(&token, NOW_MS).expect("within skew").lifetime_ms,
        NOW_MS - 10_000
    );
    let strict = JwksValidator::from_file(
        &jwks_json(),
        None,
        Vec::new(),
        "sub".to_owned(),
        "scope".to_owned(),
        0,
    )
    .expect("valid jwks");
    assert_eq!(
        reason(strict.validate(&token, NOW_MS)),
        "the jwt is no longer valid - the evaluation time 1700000000 is on or after the expiration time (exp=1699999990) claim value"
    );
    // At exactly exp + skew the token is expired.
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS + 20_000)),
        "the jwt is no longer valid - the evaluation time 1700000020 is on or after the expiration time (exp=1699999990) claim value (even when providing 30 seconds of leeway to account for clock skew)"
    );
    // Not before, with and without skew.
    let mut early = claims();
    early["nbf"] = json!(NOW_S + 20);
    let token = rs256(&early);
    assert!(jwks_validator(None, &[]).validate(&token, NOW_MS).is_ok());
    assert!(reason(strict.validate(&token, NOW_MS)).starts_with("the jwt is not yet valid"));
}

#[test]
fn jwks_required_dates() {
    for (missing, expected) in [
        ("exp", "no expiration time (exp) claim present"),
        ("iat", "no issued at (iat) claim present"),
    ] {
        let mut c = claims();
        c.as_object_mut().expect("object").remove(missing);
        assert_eq!(reason(jwks_validator(None, &[]).validate(&rs256(&c), NOW_MS)), expected);
    }
    let mut c = claims();
    c["exp"] = json!("tomorrow");
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&rs256(&c), NOW_MS)),
        "the 'exp' claim is not a numeric date"
    );
}

#[test]
fn jwks_wrong_issuer() {
    let validator = jwks_validator(Some("https://other.example.com"), &[]);
    assert_eq!(
        reason(validator.validate(&rs256(&claims()), NOW_MS)),
        "issuer (iss) claim value (https://issuer.example.com) doesn't match expected value of https://other.example.com"
    );
    let mut no_iss = claims();
    no_iss.as_object_mut().expect("object").remove("iss");
    assert_eq!(
        reason(validator.validate(&rs256(&no_iss), NOW_MS)),
        "no issuer (iss) claim present but was expecting https://other.example.com"
    );
    // Without an expected issuer, any issuer passes.
    assert!(jwks_validator(None, &[]).validate(&rs256(&no_iss), NOW_MS).is_ok());
}

#[test]
fn jwks_wrong_audience() {
    let mut with_aud = claims();
    with_aud["aud"] = json!(["kafka", "other"]);
    let token = rs256(&with_aud);
    assert!(jwks_validator(None, &["x", "kafka"]).validate(&token, NOW_MS).is_ok());
    assert_eq!(
        reason(jwks_validator(None, &["broker"]).validate(&token, NOW_MS)),
        "audience (aud) claim [kafka, other] doesn't contain an acceptable identifier. expected broker as an aud value"
    );
    assert_eq!(
        reason(jwks_validator(None, &["a", "b"]).validate(&token, NOW_MS)),
        "audience (aud) claim [kafka, other] doesn't contain an acceptable identifier. expected one of [a, b] as an aud value"
    );
    // jose4j's default, kept by Kafka: an aud claim with no expected audience is refused.
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
        "audience (aud) claim [kafka, other] present in the jwt but no expected audience value(s) were provided to the jwt consumer. expected one of [] as an aud value"
    );
    assert_eq!(
        reason(jwks_validator(None, &["kafka"]).validate(&rs256(&claims()), NOW_MS)),
        "no audience (aud) claim present"
    );
}

#[test]
fn jwks_missing_sub() {
    let mut no_sub = claims();
    no_sub.as_object_mut().expect("object").remove("sub");
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&rs256(&no_sub), NOW_MS)),
        "sub value must be non-null"
    );
    let mut blank = claims();
    blank["sub"] = json!("   ");
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&rs256(&blank), NOW_MS)),
        "sub value must not contain only whitespace"
    );
    let mut padded = claims();
    padded["sub"] = json!(" alice ");
    assert_eq!(
        jwks_validator(None, &[]).validate(&rs256(&padded), NOW_MS).expect("valid").principal_name,
        "alice"
    );
}

#[test]
fn jwks_scope_rules() {
    let mut list = claims();
    list["scope"] = json!([" b ", "a"]);
    assert_eq!(
        jwks_validator(None, &[]).validate(&rs256(&list), NOW_MS).expect("valid").scope,
        vec!["a", "b"]
    );
    let mut duplicate = claims();
    duplicate["scope"] = json!(["a", "a "]);
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&rs256(&duplicate), NOW_MS)),
        "scope value must not contain duplicates - a already present"
    );
    let mut number = claims();
    number["scope"] = json!(5);
    assert!(
        jwks_validator(None, &[])
            .validate(&rs256(&number), NOW_MS)
            .expect("valid")
            .scope
            .is_empty()
    );
}

#[test]
fn jwks_alg_none_refused() {
    let token = format!("{}.{}.", b64(r#"{"alg":"none"}"#), b64(&claims().to_string()));
    // SerializedJwt already refuses the empty signature section ...
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
        "malformed jwt provided; expected three sections (header, payload, and signature), but 2 sections provided"
    );
    // ... and with a signature section, alg none is refused as such.
    let token = format!("{token}c2ln");
    assert_eq!(
        reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
        "the jws algorithm 'none' is not permitted for tokens checked against a jwks"
    );
    // The unsecured validator, for its part, refuses signed tokens.
    assert!(matches!(
        unsecured().validate(&rs256(&claims()), NOW_MS),
        Err(OAuthError::InvalidToken { .. })
    ));
}

#[test]
fn access_token_validator_malformed_tokens() {
    let header = b64(r#"{"alg":"none"}"#);
    let payload = b64("{}");
    let cases: Vec<(String, &str)> = vec![
        (
            String::new(),
            "empty jwt provided; expected three sections (header, payload, and signature)",
        ),
        (
            "    ".to_owned(),
            "empty jwt provided; expected three sections (header, payload, and signature)",
        ),
        (
            "..".to_owned(),
            "malformed jwt provided; expected three sections (header, payload, and signature), but 0 sections provided",
        ),
        (
            format!(".{payload}.sig"),
            "malformed jwt provided; expected at least three sections (header, payload, and signature), but header section missing",
        ),
        (
            format!("{header}..sig"),
            "malformed jwt provided; expected at least three sections (header, payload, and signature), but payload section missing",
        ),
        (
            format!("{header}.{payload}."),
            "malformed jwt provided; expected three sections (header, payload, and signature), but 2 sections provided",
        ),
        (format!("{}.{payload}.sig", b64("[1]")), "the jwt header is not a json object"),
        (format!("{}.{payload}.sig", b64(r#"{"typ":"JWT"}"#)), "the jws header has no alg"),
        (
            format!("{}.{payload}.sig", b64(r#"{"alg":"RS256","crit":["exp"]}"#)),
            "the jws header lists critical parameters, which are not supported",
        ),
    ];
    for (token, expected) in cases {
        assert_eq!(
            reason(jwks_validator(None, &[]).validate(&token, NOW_MS)),
            expected,
            "{token:?}"
        );
    }
}

#[test]
fn jwks_malformed_file() {
    let build = |contents: &str| {
        JwksValidator::from_file(
            contents,
            None,
            Vec::new(),
            "sub".to_owned(),
            "scope".to_owned(),
            30,
        )
        .expect_err("malformed")
        .to_string()
    };
    assert_eq!(
        build("{\n  \"keys\": [\n    {\"kty\": \"RSA\",}\n  ]\n}"),
        "malformed jwks file at line 3 column 19: trailing comma"
    );
    assert_eq!(
        build("[]"),
        "malformed jwks file at the top level: expected a json object with a \"keys\" array"
    );
    assert_eq!(
        build("{\"keys\": {}}"),
        "malformed jwks file at \"keys\": expected an array of json web keys"
    );
    assert_eq!(build("{\"keys\": [1]}"), "malformed jwks file at keys[0]: expected a json object");
    assert_eq!(
        build(r#"{"keys": [{"kid": "k"}]}"#),
        "malformed jwks file at keys[0] (kid \"k\"): missing \"kty\""
    );
    assert_eq!(
        build(r#"{"keys": [{"kty": "oct"}, {"kty": "RSA", "kid": "r", "e": "AQAB"}]}"#),
        "malformed jwks file at keys[1] (kid \"r\"): missing \"n\""
    );
    assert_eq!(
        build(r#"{"keys": [{"kty": "RSA", "n": "a+b", "e": "AQAB"}]}"#),
        "malformed jwks file at keys[0]: \"n\" is not base64url"
    );
    assert_eq!(
        build(r#"{"keys": [{"kty": "EC", "kid": "e", "crv": "P-256", "x": "AAAA", "y": "AAAA"}]}"#),
        "malformed jwks file at keys[0] (kid \"e\"): \"x\" and \"y\" must be 32 bytes for P-256"
    );
    assert_eq!(
        build(r#"{"keys": [{"kty": "RSA", "kid": 7}]}"#),
        "malformed jwks file at keys[0]: \"kid\" is not a string"
    );
    // Claim-name options must not be blank.
    let error = JwksValidator::from_file(
        &jwks_json(),
        None,
        Vec::new(),
        " ".to_owned(),
        "scope".to_owned(),
        30,
    )
    .expect_err("blank sub claim name");
    assert_eq!(
        error.to_string(),
        "invalid oauthbearer option sasl.oauthbearer.sub.claim.name: value must not be blank"
    );
}

#[test]
fn file_urls() {
    for (url, path) in [
        ("file:///etc/kafka/jwks.json", "/etc/kafka/jwks.json"),
        ("file:/etc/kafka/jwks.json", "/etc/kafka/jwks.json"),
        ("FILE://localhost/etc/jwks.json", "/etc/jwks.json"),
        (" file:///tmp/a%20b.json?x#y ", "/tmp/a%20b.json"),
    ] {
        assert_eq!(parse_file_url(url).expect("file url"), PathBuf::from(path), "{url}");
    }
    for (url, reason) in [
        (
            "https://idp.example.com/jwks",
            "seglog does not fetch jwks over http; download the jwks and name the file with a file: url",
        ),
        (
            "HTTP://idp/jwks",
            "seglog does not fetch jwks over http; download the jwks and name the file with a file: url",
        ),
        ("ftp://idp/jwks", "only file: urls are supported (seglog does not fetch jwks over http)"),
        (
            "/etc/jwks.json",
            "the url has no protocol; only file: urls are supported (seglog does not fetch jwks over http)",
        ),
        (
            "file://remote/etc/jwks.json",
            "the file: url names a remote host; only local files are supported",
        ),
        ("file:jwks.json", "the file: url must hold an absolute path"),
        ("file:///", "the file: url names a directory, not a file"),
    ] {
        let error = parse_file_url(url).expect_err("refused");
        let OAuthError::InvalidJwksUrl { reason: found, .. } = &error else {
            panic!("{url}: {error}")
        };
        assert_eq!(found, reason, "{url}");
    }
    assert_eq!(
        parse_file_url("https://idp/jwks").expect_err("http").to_string(),
        "sasl.oauthbearer.jwks.endpoint.url \"https://idp/jwks\": seglog does not fetch jwks over http; download the jwks and name the file with a file: url"
    );
}
