//! Tests of `scram.rs`.

//! Ported from Kafka: ScramFormatterTest (rfc7677Example, saslName), ScramMessagesTest
//! (validClientFirstMessage, invalidClientFirstMessage, validServerFirstMessage,
//! invalidServerFirstMessage, validClientFinalMessage, invalidClientFinalMessage,
//! validServerFinalMessage, invalidServerFinalMessage), ScramSaslServerTest
//! (noAuthorizationIdSpecified, authorizationIdEqualsAuthenticationId,
//! authorizationIdNotEqualsAuthenticationId, validateNonceExchange,
//! validateFailedNonceExchange) and admin ScramMechanismTest (fromType, fromMechanismName).

use super::*;

const USER_A: &str = "userA";
const USER_B: &str = "userB";

fn credential(mechanism: ScramMechanism, password: &str) -> ScramCredential {
    ScramCredential::from_password(mechanism, password, b"fixed-test-salt", 4096)
}

/// The credential store of ScramSaslServerTest: userA/passwordA, userB/passwordB.
fn store(mechanism: ScramMechanism) -> impl Fn(&str) -> Option<ScramCredential> {
    move |user: &str| match user {
        USER_A => Some(credential(mechanism, "passwordA")),
        USER_B => Some(credential(mechanism, "passwordB")),
        _ => None,
    }
}

/// Runs a whole exchange; returns the server's verdict.
fn exchange(
    mechanism: ScramMechanism,
    client: &mut ScramClient,
    lookup: impl FnOnce(&str) -> Option<ScramCredential>,
) -> Result<ScramOutcome, ScramError> {
    let mut server = ScramServer::new(mechanism).expect("random nonce");
    let server_first = server.client_first(&client.client_first(), lookup)?;
    let client_final = client.client_final(&server_first)?;
    server.client_final(&client_final)
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("scram messages are ascii")
}

fn malformed(message: &'static str) -> ScramError {
    ScramError::Malformed { message, reason: GRAMMAR }
}

// ---- ScramFormatterTest ----

#[test]
fn rfc7677_example_end_to_end() {
    let mechanism = ScramMechanism::Sha256;
    let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("rfc salt");
    let stored = ScramCredential::from_password(mechanism, "pencil", &salt, 4096);
    let mut client = ScramClient::with_nonce(mechanism, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    let mut server = ScramServer::with_nonce(mechanism, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");

    let client_first = client.client_first();
    assert_eq!(text(&client_first), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let mut looked_up = String::new();
    let server_first = server
        .client_first(&client_first, |user| {
            looked_up = user.to_owned();
            Some(stored.clone())
        })
        .expect("server first");
    assert_eq!(looked_up, "user");
    assert_eq!(
        text(&server_first),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let client_final = client.client_final(&server_first).expect("client final");
    assert_eq!(
        text(&client_final),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    let outcome = server.client_final(&client_final).expect("valid proof");
    assert_eq!(text(&outcome.server_final), "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    assert_eq!(outcome.username, "user");
    assert!(server.is_complete());
    client.verify_server_final(&outcome.server_final).expect("server signature");
    assert!(client.is_complete());
}

#[test]
fn rfc7677_example_parsed_fields() {
    let first = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").expect("c1");
    assert_eq!(
        (first.sasl_name, first.nonce, first.gs2_header, first.bare),
        ("user", "rOprNGfwEbeRWgbNEkqO", "n,,", "n=user,r=rOprNGfwEbeRWgbNEkqO")
    );
    let s1 =
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let server_first = parse_server_first(s1).expect("s1");
    assert_eq!(server_first.nonce, "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
    assert_eq!(server_first.salt, BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt"));
    assert_eq!(server_first.iterations, 4096);
    let c2 = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    let last = parse_client_final(c2).expect("c2");
    assert_eq!(last.channel_binding, b"n,,");
    assert_eq!(last.without_proof, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
    assert_eq!(last.proof.len(), 32);
    assert_eq!(ScramMechanism::Sha256.min_iterations(), 4096);
}

#[test]
fn sasl_name_round_trips() {
    // ScramFormatterTest.saslName
    for username in
        ["user1", "123", "1,2", "user=A", "user==B", "user,1", "user 1", ",", "=", ",=", "=="]
    {
        let encoded = sasl_name(username);
        assert!(!encoded.contains(','), "{encoded}");
        assert!(!encoded.replace("=2C", "").replace("=3D", "").contains('='), "{encoded}");
        assert_eq!(username_of(&encoded).expect("decodes"), username);
    }
    assert_eq!(sasl_name("a=b,c"), "a=3Db=2Cc");
    assert_eq!(username_of("test=2Cuser").expect("comma"), "test,user");
    assert_eq!(username_of("test=3Duser").expect("equals"), "test=user");
    for bad in ["a=b", "a=", "=2", "=3d"] {
        assert_eq!(
            username_of(bad),
            Err(ScramError::InvalidSaslName { sasl_name: bad.to_owned() })
        );
    }
}

#[test]
fn username_with_comma_and_equals_authenticates() {
    let mechanism = ScramMechanism::Sha256;
    let mut client = ScramClient::new(mechanism, "a,b=c", "pw").expect("client");
    assert!(text(&client.client_first()).starts_with("n,,n=a=2Cb=3Dc,r="));
    let outcome = exchange(mechanism, &mut client, |user| {
        (user == "a,b=c").then(|| credential(mechanism, "pw"))
    })
    .expect("authenticated");
    assert_eq!(outcome.username, "a,b=c");
}

// ---- ScramMessagesTest ----

const VALID_EXTENSIONS: [&str; 3] = [
    "ext=val1",
    "anotherext=name1=value1 name2=another test value \"'!$[]()",
    "first=val1,second=name1 = value ,third=123",
];
const INVALID_EXTENSIONS: [&str; 5] =
    ["ext1=value", "ext", "ext=value1,value2", "ext=,", "ext =value"];
const VALID_RESERVED: [&str; 2] =
    ["m=reserved-value", "m=name1=value1 name2=another test value \"'!$[]()"];
const INVALID_RESERVED: [&str; 3] = ["m", "m=name,value", "m=,"];
const NONCE: &str = "ka2pqmkfg6xu3o3x1eb6i1ciwt";
const B64: &str = "c29tZSByYW5kb20gYnl0ZXMgZm9yIHRlc3Rz";

#[test]
fn valid_client_first_message() {
    let check = |message: &str, sasl: &str, authzid: Option<&str>| {
        let parsed = parse_client_first(message.as_bytes()).expect(message);
        assert_eq!(
            (parsed.sasl_name, parsed.nonce, parsed.authorization_id),
            (sasl, NONCE, authzid)
        );
        assert!(!parsed.token_auth);
    };
    check(&format!("n,,n=testuser,r={NONCE}"), "testuser", None);
    check(&format!("n,,n=test=2Cuser,r={NONCE}"), "test=2Cuser", None);
    check(&format!("n,,n=test=3Duser,r={NONCE}"), "test=3Duser", None);
    check(&format!("n,a=testauthzid,n=testuser,r={NONCE}"), "testuser", Some("testauthzid"));
    for reserved in VALID_RESERVED {
        let message = format!("n,,{reserved},n=testuser,r={NONCE}");
        check(&message, "testuser", None);
        let parsed = parse_client_first(message.as_bytes()).expect("reserved");
        assert_eq!(parsed.bare, format!("{reserved},n=testuser,r={NONCE}"));
    }
    for extension in VALID_EXTENSIONS {
        check(&format!("n,,n=testuser,r={NONCE},{extension}"), "testuser", None);
    }
    let message = format!("n,,n=testuser,r={NONCE},tokenauth=true");
    let token = parse_client_first(message.as_bytes()).expect("tokenauth");
    assert!(token.token_auth);
}

#[test]
fn invalid_client_first_message() {
    let mut invalid = vec![
        format!("n,x=something,n=testuser,r={NONCE}"),
        String::new(),
        "n,,".to_owned(),
        format!("n,,r={NONCE}"),
        "n,,n=testuser".to_owned(),
        "n,,n=testuser,r=".to_owned(),
        format!("n,a=,n=testuser,r={NONCE}"),
        format!("n,,n=,r={NONCE}"),
        format!("n,,n=test=user,r={NONCE}"),
        format!("n,,n=t\u{e9}st,r={NONCE}"),
        format!("n,,n=testuser,r={NONCE} x"),
        format!("x,,n=testuser,r={NONCE}"),
    ];
    invalid.extend(INVALID_RESERVED.iter().map(|r| format!("n,,{r},n=testuser,r={NONCE}")));
    invalid.extend(INVALID_EXTENSIONS.iter().map(|e| format!("n,,n=testuser,r={NONCE},{e}")));
    for message in invalid {
        assert_eq!(
            parse_client_first(message.as_bytes()).map(|_| ()),
            Err(malformed(CLIENT_FIRST_NAME)),
            "{message}"
        );
    }
    assert_eq!(
        parse_client_first(b"n,,n=\xff,r=abc").map(|_| ()),
        Err(ScramError::Malformed { message: CLIENT_FIRST_NAME, reason: "not valid utf-8" })
    );
}

#[test]
fn valid_server_first_message() {
    let nonce = format!("{NONCE}serverpart");
    let check = |message: &str, iterations: u32| {
        let parsed = parse_server_first(message.as_bytes()).expect(message);
        assert_eq!(parsed.nonce, nonce);
        assert_eq!(parsed.salt, BASE64.decode(B64).expect("b64"));
        assert_eq!(parsed.iterations, iterations);
    };
    check(&format!("r={nonce},s={B64},i=4096"), 4096);
    check(&format!("r={nonce},s={B64},i=8192"), 8192);
    for reserved in VALID_RESERVED {
        check(&format!("{reserved},r={nonce},s={B64},i=4096"), 4096);
    }
    for extension in VALID_EXTENSIONS {
        check(&format!("r={nonce},s={B64},i=4096,{extension}"), 4096);
    }
}

#[test]
fn invalid_server_first_message() {
    let mut invalid = vec![
        format!("r={NONCE},s==123,i=4096"),
        format!("r={NONCE},invalid,s={B64},i=4096"),
        format!("r={NONCE},s={B64}"),
        format!("r={NONCE},s={B64},i=-1"),
    ];
    invalid.extend(INVALID_RESERVED.iter().map(|r| format!("{r},r={NONCE},s={B64},i=4096")));
    invalid.extend(INVALID_EXTENSIONS.iter().map(|e| format!("r={NONCE},s={B64},i=4096,{e}")));
    for message in invalid {
        assert_eq!(
            parse_server_first(message.as_bytes()).map(|_| ()),
            Err(malformed(SERVER_FIRST_NAME)),
            "{message}"
        );
    }
    let bad_iterations = ScramError::Malformed {
        message: SERVER_FIRST_NAME,
        reason: "iterations is not a positive 32-bit integer",
    };
    for iterations in ["0", "2147483648", "99999999999"] {
        let message = format!("r={NONCE},s={B64},i={iterations}");
        assert_eq!(parse_server_first(message.as_bytes()).map(|_| ()), Err(bad_iterations.clone()));
    }
}

#[test]
fn valid_client_final_message() {
    let check = |message: &str| {
        let parsed = parse_client_final(message.as_bytes()).expect(message);
        assert_eq!(parsed.channel_binding, BASE64.decode(B64).expect("b64"));
        assert_eq!(parsed.nonce, NONCE);
        assert_eq!(parsed.proof, BASE64.decode("biws").expect("b64"));
        let proof_at = message.rfind(",p=").expect("proof");
        assert_eq!(parsed.without_proof, &message[..proof_at]);
    };
    check(&format!("c={B64},r={NONCE},p=biws"));
    for extension in VALID_EXTENSIONS {
        check(&format!("c={B64},r={NONCE},{extension},p=biws"));
    }
    // An extension named p before the proof.
    check(&format!("c={B64},r={NONCE},p=ab,p=biws"));
}

#[test]
fn invalid_client_final_message() {
    let mut invalid = vec![
        format!("c=ab,r={NONCE},p={B64}"),
        format!("c={B64},r={NONCE},p=123"),
        format!("c={B64},r={NONCE}"),
        format!("r={NONCE},p={B64}"),
    ];
    invalid.extend(INVALID_EXTENSIONS.iter().map(|e| format!("c={B64},r={NONCE},{e},p={B64}")));
    for message in invalid {
        assert_eq!(
            parse_client_final(message.as_bytes()).map(|_| ()),
            Err(malformed(CLIENT_FINAL_NAME)),
            "{message}"
        );
    }
    // Matches the grammar, but non-canonical base64 (trailing bits set).
    assert_eq!(
        parse_client_final(format!("c=biws,r={NONCE},p=ab==").as_bytes()).map(|_| ()),
        Err(ScramError::Malformed {
            message: CLIENT_FINAL_NAME,
            reason: "proof is not valid base64"
        })
    );
}

#[test]
fn valid_server_final_message() {
    let signature = BASE64.decode(B64).expect("b64");
    assert_eq!(
        parse_server_final(format!("v={B64}").as_bytes()),
        Ok(ServerFinalMessage::Signature(signature.clone()))
    );
    assert_eq!(parse_server_final(b"e=other-error"), Ok(ServerFinalMessage::Error("other-error")));
    assert_eq!(
        parse_server_final(b"e=unknown-user"),
        Ok(ServerFinalMessage::Error("unknown-user"))
    );
    for extension in VALID_EXTENSIONS {
        assert_eq!(
            parse_server_final(format!("v={B64},{extension}").as_bytes()),
            Ok(ServerFinalMessage::Signature(signature.clone()))
        );
    }
}

#[test]
fn invalid_server_final_message() {
    let mut invalid = vec!["e=error1,error2".to_owned(), "v=1=23".to_owned(), String::new()];
    for extension in INVALID_EXTENSIONS {
        invalid.push(format!("v={B64},{extension}"));
        invalid.push(format!("e=unknown-user,{extension}"));
    }
    for message in invalid {
        assert_eq!(
            parse_server_final(message.as_bytes()),
            Err(malformed(SERVER_FINAL_NAME)),
            "{message}"
        );
    }
}

// ---- ScramSaslServerTest ----

fn client_first_message(user: &str, authzid: Option<&str>) -> Vec<u8> {
    let authorization = authzid.map(|a| format!("a={a}")).unwrap_or_default();
    format!("n,{authorization},n={user},r={NONCE}").into_bytes()
}

#[test]
fn no_authorization_id_specified() {
    let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
    let challenge = server
        .client_first(&client_first_message(USER_A, None), store(ScramMechanism::Sha256))
        .expect("challenge");
    assert!(!challenge.is_empty());
}

#[test]
fn authorization_id_equals_authentication_id() {
    let mechanism = ScramMechanism::Sha256;
    let mut server = ScramServer::new(mechanism).expect("server");
    let challenge = server
        .client_first(&client_first_message(USER_A, Some(USER_A)), store(mechanism))
        .expect("challenge");
    assert!(!challenge.is_empty());
    // And the whole exchange, with c= carrying the gs2 header "n,a=userA,".
    let mut client = ScramClient::new(mechanism, USER_A, "passwordA")
        .expect("client")
        .with_authorization_id(USER_A);
    assert!(text(&client.client_first()).starts_with("n,a=userA,n=userA,r="));
    let outcome = exchange(mechanism, &mut client, store(mechanism)).expect("authenticated");
    assert_eq!(outcome.username, USER_A);
    client.verify_server_final(&outcome.server_final).expect("signature");
}

#[test]
fn authorization_id_not_equals_authentication_id() {
    let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
    let error = server
        .client_first(&client_first_message(USER_A, Some(USER_B)), store(ScramMechanism::Sha256))
        .expect_err("mismatch");
    assert_eq!(error, ScramError::AuthorizationIdMismatch);
    assert_eq!(
        error.client_message(),
        Some(
            "Authentication failed: Client requested an authorization id that is different from username"
        )
    );
    assert_eq!(ScramError::InvalidCredentials.client_message(), None);
}

#[test]
fn validate_nonce_exchange() {
    let mechanism = ScramMechanism::Sha256;
    let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
    let mut server = ScramServer::with_nonce(mechanism, "srv");
    let server_first =
        server.client_first(&client.client_first(), store(mechanism)).expect("first");
    let parsed = parse_server_first(&server_first).expect("server first parses");
    assert_eq!(parsed.nonce, format!("{NONCE}srv"));
    let client_final = client.client_final(&server_first).expect("final");
    assert!(text(&client_final).contains(&format!(",r={NONCE}srv,")));
    let outcome = server.client_final(&client_final).expect("valid");
    assert_eq!(
        parse_server_final(&outcome.server_final)
            .map(|m| matches!(m, ServerFinalMessage::Signature(_))),
        Ok(true)
    );
}

#[test]
fn validate_failed_nonce_exchange() {
    let mechanism = ScramMechanism::Sha256;
    // A nonce that only ends with the combined one passes, as in Kafka (librdkafka before
    // 1.9 repeats its own nonce in front of it); one that does not end with it fails.
    for wrong_nonce in ["someothernonce", "srvprefix", NONCE] {
        let mut server = ScramServer::with_nonce(mechanism, "srv");
        server.client_first(&client_first_message(USER_A, None), store(mechanism)).expect("first");
        let message = format!("c=biws,r={wrong_nonce},p={B64}");
        assert_eq!(server.client_final(message.as_bytes()), Err(ScramError::InvalidNonce));
    }
}

// ---- seglog rules ----

#[test]
fn sha512_round_trip() {
    let mechanism = ScramMechanism::Sha512;
    let mut client = ScramClient::new(mechanism, USER_B, "passwordB").expect("client");
    let outcome = exchange(mechanism, &mut client, store(mechanism)).expect("authenticated");
    assert_eq!(outcome.username, USER_B);
    // A SHA-512 signature is 64 bytes.
    let ServerFinalMessage::Signature(signature) =
        parse_server_final(&outcome.server_final).expect("v=")
    else {
        panic!("expected a signature");
    };
    assert_eq!(signature.len(), 64);
    client.verify_server_final(&outcome.server_final).expect("signature");
}

#[test]
fn sha256_credential_does_not_authenticate_sha512() {
    let mut client = ScramClient::new(ScramMechanism::Sha512, USER_A, "passwordA").expect("client");
    let result = exchange(ScramMechanism::Sha512, &mut client, store(ScramMechanism::Sha256));
    assert_eq!(result, Err(ScramError::InvalidCredentials));
}

#[test]
fn wrong_password_fails_and_server_stays_failed() {
    let mechanism = ScramMechanism::Sha256;
    let mut client = ScramClient::new(mechanism, USER_A, "passwordB").expect("client");
    let mut server = ScramServer::new(mechanism).expect("server");
    let server_first =
        server.client_first(&client.client_first(), store(mechanism)).expect("first");
    let client_final = client.client_final(&server_first).expect("final");
    assert_eq!(server.client_final(&client_final), Err(ScramError::InvalidCredentials));
    assert!(!server.is_complete());
    assert_eq!(
        server.client_final(&client_final),
        Err(ScramError::UnexpectedMessage { state: "failed" })
    );
}

/// `r=<nonce>,s=<base64 of a base-36 salt>,i=4096`.
fn assert_server_first_shape(server_first: &[u8], client_nonce: &str) {
    let shape = Regex::new(r"\Ar=([a-z0-9]+),s=([A-Za-z0-9+/]+=*),i=4096\z").expect("pattern");
    let caps = shape.captures(text(server_first)).expect("server first shape");
    assert!(caps[1].starts_with(client_nonce));
    assert!(caps[1].len() > client_nonce.len() && caps[1].len() <= client_nonce.len() + 26);
    let salt = BASE64.decode(&caps[2]).expect("salt");
    assert!(!salt.is_empty() && salt.len() <= 26, "{salt:?}");
    assert!(salt.iter().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
}

#[test]
fn unknown_user_is_not_revealed_at_client_first() {
    let mechanism = ScramMechanism::Sha256;
    let real_salt = random_salt().expect("salt");
    let known = ScramCredential::from_password(mechanism, "passwordA", &real_salt, 4096);

    let mut known_client = ScramClient::with_nonce(mechanism, USER_A, "wrong", NONCE);
    let mut known_server = ScramServer::new(mechanism).expect("server");
    let known_first = known_server
        .client_first(&known_client.client_first(), |_| Some(known.clone()))
        .expect("known first");
    assert_server_first_shape(&known_first, NONCE);

    let mut unknown_client = ScramClient::with_nonce(mechanism, "nobody", "wrong", NONCE);
    let mut unknown_server = ScramServer::new(mechanism).expect("server");
    let unknown_first = unknown_server
        .client_first(&unknown_client.client_first(), |_| None)
        .expect("unknown user still gets a server first");
    assert_server_first_shape(&unknown_first, NONCE);

    // Both fail at client-final, with the same error.
    let known_error = known_server
        .client_final(&known_client.client_final(&known_first).expect("final"))
        .expect_err("wrong password");
    let unknown_error = unknown_server
        .client_final(&unknown_client.client_final(&unknown_first).expect("final"))
        .expect_err("unknown user");
    assert_eq!(known_error, unknown_error);
    assert_eq!(unknown_error, ScramError::InvalidCredentials);
    assert_eq!(unknown_error.to_string(), known_error.to_string());
}

#[test]
fn unknown_user_fake_salt_is_stable_per_user() {
    let salt_of = |mechanism: ScramMechanism, user: &str| {
        let mut server = ScramServer::new(mechanism).expect("server");
        let first = server
            .client_first(format!("n,,n={user},r={NONCE}").as_bytes(), |_| None)
            .expect("first");
        parse_server_first(&first).expect("parses").salt
    };
    let sha256 = ScramMechanism::Sha256;
    assert_eq!(salt_of(sha256, "ghost"), salt_of(sha256, "ghost"));
    assert_ne!(salt_of(sha256, "ghost"), salt_of(sha256, "ghost2"));
    assert_ne!(salt_of(sha256, "ghost"), salt_of(ScramMechanism::Sha512, "ghost"));
    // Even the right-looking password of an unknown user fails.
    let fake = fake_credential(sha256, "ghost").expect("fake");
    assert_eq!(fake.iterations, 4096);
    assert_eq!((fake.stored_key.len(), fake.server_key.len()), (32, 32));
    assert_eq!(
        fake_credential(ScramMechanism::Sha512, "ghost").expect("fake").stored_key.len(),
        64
    );
}

#[test]
fn unknown_user_with_fake_credential_as_lookup_result_is_still_refused() {
    // A client that somehow knows the fake keys still fails: the unknown flag is checked.
    let mechanism = ScramMechanism::Sha256;
    let mut client = ScramClient::new(mechanism, "ghost", "anything").expect("client");
    assert_eq!(exchange(mechanism, &mut client, |_| None), Err(ScramError::InvalidCredentials));
}

#[test]
fn channel_binding_is_refused() {
    let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
    assert_eq!(
        server.client_first(b"y,,n=userA,r=abc", store(ScramMechanism::Sha256)),
        Err(ScramError::ChannelBindingUnsupported { flag: 'y' })
    );
    let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
    assert_eq!(
        server.client_first(b"p=tls-unique,,n=userA,r=abc", store(ScramMechanism::Sha256)),
        Err(ScramError::ChannelBindingUnsupported { flag: 'p' })
    );
}

#[test]
fn channel_binding_must_be_the_gs2_header() {
    let mechanism = ScramMechanism::Sha256;
    let mut server = ScramServer::with_nonce(mechanism, "srv");
    server
        .client_first(&client_first_message(USER_A, Some(USER_A)), store(mechanism))
        .expect("first");
    // c=biws is "n,,", but the client sent "n,a=userA,".
    let message = format!("c=biws,r={NONCE}srv,p={B64}");
    assert_eq!(server.client_final(message.as_bytes()), Err(ScramError::ChannelBindingMismatch));
}

#[test]
fn delegation_tokens_are_refused() {
    for value in ["true", "TRUE", "True"] {
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        let message = format!("n,,n=tokenid,r={NONCE},tokenauth={value}");
        assert_eq!(
            server.client_first(message.as_bytes(), |_| None),
            Err(ScramError::DelegationTokenUnsupported)
        );
    }
    let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
    let message = format!("n,,n=userA,r={NONCE},tokenauth=false");
    server
        .client_first(message.as_bytes(), store(ScramMechanism::Sha256))
        .expect("tokenauth=false is a normal login");
}

#[test]
fn malformed_messages_are_typed_errors() {
    let mechanism = ScramMechanism::Sha256;
    for message in [&b""[..], b"n,,", b"garbage", b"\xff\xfe", b"n,,n=userA", b"n,,n=a=b,r=x"] {
        let mut server = ScramServer::new(mechanism).expect("server");
        let error = server.client_first(message, store(mechanism)).expect_err("malformed");
        let ScramError::Malformed { message, .. } = &error else { panic!("{error}") };
        assert_eq!(*message, CLIENT_FIRST_NAME);
    }
    for message in [&b""[..], b"c=biws", b"c=biws,r=x,p=", b"\xff", b"c=biws,r=x,p=a"] {
        let mut server = ScramServer::with_nonce(mechanism, "srv");
        server.client_first(&client_first_message(USER_A, None), store(mechanism)).expect("first");
        let error = server.client_final(message).expect_err("malformed");
        match &error {
            ScramError::Malformed { message, .. } => assert_eq!(*message, CLIENT_FINAL_NAME),
            ScramError::InvalidNonce => {}
            other => panic!("{other}"),
        }
    }
    // A well-formed proof of the wrong length is a credential failure, not a panic.
    let mut server = ScramServer::with_nonce(mechanism, "srv");
    server.client_first(&client_first_message(USER_A, None), store(mechanism)).expect("first");
    let message = format!("c=biws,r={NONCE}srv,p=biws");
    assert_eq!(server.client_final(message.as_bytes()), Err(ScramError::InvalidCredentials));
}

#[test]
fn messages_out_of_order_are_refused() {
    let mechanism = ScramMechanism::Sha256;
    let mut server = ScramServer::new(mechanism).expect("server");
    assert_eq!(
        server.client_final(b"c=biws,r=x,p=biws"),
        Err(ScramError::UnexpectedMessage { state: "receive-client-first-message" })
    );
    let mut server = ScramServer::new(mechanism).expect("server");
    let first = client_first_message(USER_A, None);
    server.client_first(&first, store(mechanism)).expect("first");
    assert_eq!(
        server.client_first(&first, store(mechanism)),
        Err(ScramError::UnexpectedMessage { state: "receive-client-final-message" })
    );
    let mut client = ScramClient::new(mechanism, USER_A, "passwordA").expect("client");
    assert_eq!(
        client.verify_server_final(b"v=biws"),
        Err(ScramError::UnexpectedMessage { state: "send-client-first-message" })
    );
}

#[test]
fn client_checks_server_messages() {
    let mechanism = ScramMechanism::Sha256;
    let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
    assert_eq!(
        client.client_final(format!("r=other,s={B64},i=4096").as_bytes()),
        Err(ScramError::ServerNonceMismatch)
    );
    let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
    assert_eq!(
        client.client_final(format!("r={NONCE}x,s={B64},i=4095").as_bytes()),
        Err(ScramError::TooFewIterations {
            iterations: 4095,
            minimum: 4096,
            mechanism: "SCRAM-SHA-256"
        })
    );
    let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
    client.client_final(format!("r={NONCE}x,s={B64},i=4096").as_bytes()).expect("final");
    assert_eq!(
        client.verify_server_final(format!("v={B64}").as_bytes()),
        Err(ScramError::InvalidServerSignature)
    );
    let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
    client.client_final(format!("r={NONCE}x,s={B64},i=4096").as_bytes()).expect("final");
    assert_eq!(
        client.verify_server_final(b"e=other-error"),
        Err(ScramError::ServerError { error: "other-error".to_owned() })
    );
}

#[test]
fn iteration_bounds() {
    let mechanism = ScramMechanism::Sha512;
    assert_eq!((mechanism.min_iterations(), mechanism.max_iterations()), (4096, 16384));
    assert_eq!(mechanism.check_iterations(4096), Ok(4096));
    assert_eq!(mechanism.check_iterations(16384), Ok(16384));
    for too_few in [4095, 0, -1, i32::MIN] {
        assert_eq!(
            mechanism.check_iterations(too_few),
            Err(ScramError::TooFewIterations {
                iterations: i64::from(too_few),
                minimum: 4096,
                mechanism: "SCRAM-SHA-512"
            })
        );
    }
    assert_eq!(
        mechanism.check_iterations(16385).map_err(|e| e.to_string()),
        Err("iterations 16385 is more than the maximum 16384 for SCRAM-SHA-512".to_owned())
    );
    // ScramSaslServer refuses a stored credential below the minimum.
    let weak = ScramCredential::from_password(ScramMechanism::Sha256, "passwordA", b"salt", 4095);
    let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
    assert_eq!(
        server
            .client_first(&client_first_message(USER_A, None), |_| Some(weak))
            .map_err(|e| e.to_string()),
        Err("iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256".to_owned())
    );
}

#[test]
fn from_salted_password_equals_from_password() {
    for mechanism in ScramMechanism::ALL {
        let salt = random_salt().expect("salt");
        let salted = salted_password(mechanism, "s3cret", &salt, 8192);
        assert_eq!(
            ScramCredential::from_salted_password(mechanism, &salted, &salt, 8192),
            ScramCredential::from_password(mechanism, "s3cret", &salt, 8192)
        );
        assert_ne!(
            ScramCredential::from_password(mechanism, "s3cret", &salt, 8192),
            ScramCredential::from_password(mechanism, "s3cret!", &salt, 8192)
        );
    }
    // RFC 7677: SaltedPassword = Hi("pencil", salt, 4096) gives the vector's keys.
    let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
    let credential = ScramCredential::from_password(ScramMechanism::Sha256, "pencil", &salt, 4096);
    assert_eq!((credential.stored_key.len(), credential.server_key.len()), (32, 32));
}

#[test]
fn debug_hides_secrets() {
    let mechanism = ScramMechanism::Sha256;
    let credential = ScramCredential::from_password(mechanism, "hunter2", b"pepper", 4096);
    let debug = format!("{credential:?}");
    assert_eq!(
        debug,
        "ScramCredential { salt: \"cGVwcGVy\", stored_key: \"<redacted>\", server_key: \"<redacted>\", iterations: 4096 }"
    );
    assert!(!debug.contains(&BASE64.encode(&credential.stored_key)));

    let client = ScramClient::with_nonce(mechanism, "alice", "hunter2", NONCE);
    let debug = format!("{client:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("password: \"<redacted>\""), "{debug}");

    let mut server = ScramServer::with_nonce(mechanism, "srv");
    server.client_first(&client.client_first(), |_| Some(credential.clone())).expect("first");
    let debug = format!("{server:?}");
    assert_eq!(
        debug,
        "ScramServer { mechanism: Sha256, state: \"receive-client-final-message\", username: \"alice\", .. }"
    );
}

#[test]
fn mechanism_names_and_types() {
    // Kafka's admin ScramMechanismTest: fromType / fromMechanismName, UNKNOWN is 0.
    assert_eq!(ScramMechanism::from_name("SCRAM-SHA-256"), Some(ScramMechanism::Sha256));
    assert_eq!(ScramMechanism::from_name("SCRAM-SHA-512"), Some(ScramMechanism::Sha512));
    assert_eq!(ScramMechanism::from_name("scram-sha-256"), None);
    assert_eq!(ScramMechanism::from_name("PLAIN"), None);
    assert_eq!(ScramMechanism::from_kafka_type(0), None);
    assert_eq!(ScramMechanism::from_kafka_type(1), Some(ScramMechanism::Sha256));
    assert_eq!(ScramMechanism::from_kafka_type(2), Some(ScramMechanism::Sha512));
    assert_eq!(ScramMechanism::from_kafka_type(3), None);
    assert_eq!(ScramMechanism::from_kafka_type(-1), None);
    for mechanism in ScramMechanism::ALL {
        assert_eq!(ScramMechanism::from_name(mechanism.name()), Some(mechanism));
        assert_eq!(ScramMechanism::from_kafka_type(mechanism.kafka_type()), Some(mechanism));
        assert_eq!(mechanism.to_string(), mechanism.name());
    }
}

#[test]
fn base36_matches_big_integer_to_string() {
    assert_eq!(base36_of_130_bits([0; 17]), "0");
    assert_eq!(base36_of_130_bits([0xff; 17]), "1omfro7zwmumr3umxudzyj6scf");
    let mut two_pow_129 = [0u8; 17];
    two_pow_129[0] = 0x02;
    assert_eq!(base36_of_130_bits(two_pow_129), "ub7vu3zybfbdjxbgx6zz9le68");
    let mut thirty_five = [0u8; 17];
    thirty_five[16] = 35;
    assert_eq!(base36_of_130_bits(thirty_five), "z");
    let salt = random_salt().expect("salt");
    assert!(!salt.is_empty() && salt.len() <= 26);
    assert_ne!(random_salt().expect("salt"), salt);
}
