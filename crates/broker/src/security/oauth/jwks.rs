//! The JWT validator of `sasl.oauthbearer.jwks.endpoint.url` (Kafka's
//! `OAuthBearerValidatorCallbackHandler` with its `VerificationKeyResolver`): signed tokens
//! checked against the keys of a JWKS file, with issuer, audience, expiry and subject.

#[allow(clippy::wildcard_imports, reason = "the parent module's token checks")]
use super::*;

// ---------------------------------------------------------------------------------------------
// JWKS validator
// ---------------------------------------------------------------------------------------------

/// The key types of a JWKS that can check signatures here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyType {
    Rsa,
    EcP256,
    EcP384,
}

impl KeyType {
    fn allows(self, alg: Algorithm) -> bool {
        match self {
            Self::Rsa => matches!(
                alg,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ),
            Self::EcP256 => alg == Algorithm::ES256,
            Self::EcP384 => alg == Algorithm::ES384,
        }
    }
}

/// One verification key of the JWKS (a public key, not a secret).
pub(super) struct JwksKey {
    kid: Option<String>,
    key_type: KeyType,
    /// The key's `alg` member, if any: the only algorithm it may verify.
    alg: Option<String>,
    key: DecodingKey,
}

impl fmt::Debug for JwksKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwksKey")
            .field("kid", &self.kid)
            .field("key_type", &self.key_type)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// Kafka's `ValidatorAccessTokenValidator` over a `JwksFileVerificationKeyResolver`: checks a
/// signed JWT against the keys of a JWKS file, then its dates, audience, issuer, subject and scope.
#[derive(Debug)]
pub(crate) struct JwksValidator {
    keys: Vec<JwksKey>,
    expected_issuer: Option<String>,
    expected_audience: BTreeSet<String>,
    sub_claim_name: String,
    scope_claim_name: String,
    clock_skew_s: u64,
}

pub(super) fn jwks_error(location: impl Into<String>, reason: impl Into<String>) -> OAuthError {
    OAuthError::MalformedJwks { location: location.into(), reason: reason.into() }
}

impl JwksValidator {
    /// Builds the validator from the JWKS file's contents (the caller reads the file named by
    /// [`parse_file_url`]) and the broker's `sasl.oauthbearer.expected.issuer`,
    /// `sasl.oauthbearer.expected.audience`, `sasl.oauthbearer.sub.claim.name`,
    /// `sasl.oauthbearer.scope.claim.name` and `sasl.oauthbearer.clock.skew.seconds`.
    ///
    /// RSA keys and EC keys on P-256 or P-384 are kept; keys of other types (`oct`, `OKP`, other
    /// curves) and keys whose `use` is not `sig` are skipped, as jose4j never selects them.
    pub(crate) fn from_file(
        path_contents: &str,
        expected_issuer: Option<String>,
        expected_audience: Vec<String>,
        sub_claim: String,
        scope_claim: String,
        clock_skew_s: u64,
    ) -> Result<Self, OAuthError> {
        let sub_claim_name = claim_name_option("sasl.oauthbearer.sub.claim.name", sub_claim)?;
        let scope_claim_name = claim_name_option("sasl.oauthbearer.scope.claim.name", scope_claim)?;
        let expected_issuer = expected_issuer
            .map(|issuer| java_trim(&issuer).to_owned())
            .filter(|issuer| !issuer.is_empty());
        Ok(Self {
            keys: parse_jwks(path_contents)?,
            expected_issuer,
            expected_audience: expected_audience.into_iter().collect(),
            sub_claim_name,
            scope_claim_name,
            clock_skew_s,
        })
    }

    /// The number of usable verification keys read from the file.
    #[cfg_attr(not(test), allow(dead_code, reason = "for the broker's startup log"))]
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Kafka's `ValidatorAccessTokenValidator.validate`.
    pub(super) fn validate(&self, token: &str, now_ms: u64) -> Result<ValidatedToken, OAuthError> {
        let (header_b64, payload_b64, signature_b64) = split_serialized_jwt(token)?;
        let header = decode_json_object(header_b64, "header")?;
        let alg = jws_algorithm(&header)?;
        if header.get("crit").is_some_and(|crit| crit != &Value::Array(Vec::new())) {
            return Err(invalid_token(
                "the jws header lists critical parameters, which are not supported",
            ));
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.as_str()),
            Some(_) => return Err(invalid_token("the jws header's kid is not a string")),
        };
        let key = self.select_key(kid, alg)?;
        let signing_input = format!("{header_b64}.{payload_b64}");
        match jsonwebtoken::crypto::verify(signature_b64, signing_input.as_bytes(), &key.key, alg) {
            Ok(true) => {}
            Ok(false) => return Err(invalid_token("jws signature verification failed")),
            Err(e) => {
                return Err(invalid_token(format!("jws signature could not be verified: {e}")));
            }
        }
        let claims = decode_json_object(payload_b64, "payload")?;
        self.validate_claims(&claims, now_ms)
    }

    /// jose4j's `VerificationJwkSelector` over the file's keys: same `kid` when the token names
    /// one, a key type (and curve) that fits `alg`, and the key's own `alg` if it has one; the
    /// first match wins.
    fn select_key(&self, kid: Option<&str>, alg: Algorithm) -> Result<&JwksKey, OAuthError> {
        let alg_name = algorithm_name(alg);
        self.keys
            .iter()
            .find(|key| {
                kid.is_none_or(|kid| key.kid.as_deref() == Some(kid))
                    && key.key_type.allows(alg)
                    && key.alg.as_deref().is_none_or(|key_alg| key_alg == alg_name)
            })
            .ok_or_else(|| {
                invalid_token(format!(
                    "no key in the jwks file matches the token's kid ({}) and alg ({alg_name})",
                    kid.map_or_else(|| "none".to_owned(), |kid| format!("{kid:?}"))
                ))
            })
    }

    /// The claim checks of jose4j's `JwtConsumer` as Kafka builds it (exp and iat required, nbf,
    /// aud, iss), then Kafka's `ClaimValidationUtils` on scope, exp, sub and iat.
    fn validate_claims(
        &self,
        claims: &Map<String, Value>,
        now_ms: u64,
    ) -> Result<ValidatedToken, OAuthError> {
        let exp = numeric_date(claims, "exp")?
            .ok_or_else(|| invalid_token("no expiration time (exp) claim present"))?;
        let iat = numeric_date(claims, "iat")?
            .ok_or_else(|| invalid_token("no issued at (iat) claim present"))?;
        let nbf = numeric_date(claims, "nbf")?;
        let evaluation_s = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
        let leeway_s = i64::try_from(self.clock_skew_s).unwrap_or(i64::MAX);
        let skew_text = if leeway_s > 0 {
            format!(" (even when providing {leeway_s} seconds of leeway to account for clock skew)")
        } else {
            String::new()
        };
        if evaluation_s.saturating_sub(leeway_s) >= exp {
            return Err(invalid_token(format!(
                "the jwt is no longer valid - the evaluation time {evaluation_s} is on or after the expiration time (exp={exp}) claim value{skew_text}"
            )));
        }
        if exp < iat {
            return Err(invalid_token(format!(
                "the expiration time (exp={exp}) claim value cannot be before the issued at (iat={iat}) claim value"
            )));
        }
        if let Some(nbf) = nbf {
            if exp < nbf {
                return Err(invalid_token(format!(
                    "the expiration time (exp={exp}) claim value cannot be before the not before (nbf={nbf}) claim value"
                )));
            }
            if evaluation_s.saturating_add(leeway_s) < nbf {
                return Err(invalid_token(format!(
                    "the jwt is not yet valid as the evaluation time {evaluation_s} is before the not before (nbf={nbf}) claim time{skew_text}"
                )));
            }
        }
        self.validate_audience(claims)?;
        self.validate_issuer(claims)?;
        if claims.get("sub").is_some_and(|sub| !sub.is_string()) {
            return Err(invalid_token("the 'sub' claim is not a string"));
        }

        let scope = self.scope(claims)?;
        let lifetime_ms = u64::try_from(exp.saturating_mul(1000)).map_err(|_| {
            invalid_token(format!(
                "exp value must be non-negative; value given was \"{}\"",
                exp.saturating_mul(1000)
            ))
        })?;
        let principal_name = match claims.get(&self.sub_claim_name) {
            None => None,
            Some(Value::String(sub)) => Some(sub.as_str()),
            Some(_) => {
                return Err(invalid_token(format!(
                    "could not extract the '{}' claim from the access token",
                    self.sub_claim_name
                )));
            }
        };
        let principal_name = validate_string(&self.sub_claim_name, principal_name)?;
        if iat < 0 {
            return Err(invalid_token(format!(
                "iat value must be null or non-negative; value given was \"{}\"",
                iat.saturating_mul(1000)
            )));
        }
        Ok(ValidatedToken { principal_name, lifetime_ms, scope })
    }

    /// jose4j's `AudValidator`: with expected audiences the token's `aud` must name one of them;
    /// without, a token that carries `aud` at all is refused (Kafka does not skip this default).
    fn validate_audience(&self, claims: &Map<String, Value>) -> Result<(), OAuthError> {
        let audiences: Vec<String> = match claims.get("aud") {
            None => {
                if self.expected_audience.is_empty() {
                    return Ok(());
                }
                return Err(invalid_token("no audience (aud) claim present"));
            }
            Some(Value::String(aud)) => vec![aud.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    invalid_token("the 'aud' claim is not a string or an array of strings")
                })?,
            Some(_) => {
                return Err(invalid_token(
                    "the 'aud' claim is not a string or an array of strings",
                ));
            }
        };
        if audiences.iter().any(|aud| self.expected_audience.contains(aud)) {
            return Ok(());
        }
        let expected = if self.expected_audience.len() == 1 {
            java_list(&self.expected_audience).trim_matches(['[', ']']).to_owned()
        } else {
            format!("one of {}", java_list(&self.expected_audience))
        };
        let problem = if self.expected_audience.is_empty() {
            "present in the jwt but no expected audience value(s) were provided to the jwt consumer"
        } else {
            "doesn't contain an acceptable identifier"
        };
        Err(invalid_token(format!(
            "audience (aud) claim {} {problem}. expected {expected} as an aud value",
            java_list(&audiences)
        )))
    }

    /// jose4j's `IssValidator`: with an expected issuer, `iss` must be present and equal.
    fn validate_issuer(&self, claims: &Map<String, Value>) -> Result<(), OAuthError> {
        let iss = match claims.get("iss") {
            None => None,
            Some(Value::String(iss)) => Some(iss.as_str()),
            Some(_) => return Err(invalid_token("the 'iss' claim is not a string")),
        };
        let Some(expected) = &self.expected_issuer else {
            return Ok(());
        };
        match iss {
            None => Err(invalid_token(format!(
                "no issuer (iss) claim present but was expecting {expected}"
            ))),
            Some(iss) if iss == expected => Ok(()),
            Some(iss) => Err(invalid_token(format!(
                "issuer (iss) claim value ({iss}) doesn't match expected value of {expected}"
            ))),
        }
    }

    /// Kafka's scope handling: a string is one item, a list its items, anything else no scope;
    /// then `ClaimValidationUtils.validateScopes` (non-empty, trimmed, no duplicates).
    fn scope(&self, claims: &Map<String, Value>) -> Result<Vec<String>, OAuthError> {
        let name = &self.scope_claim_name;
        let raw: Vec<Option<&str>> = match claims.get(name) {
            Some(Value::String(scope)) => vec![Some(scope.as_str())],
            Some(Value::Array(items)) => items.iter().map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut scope = BTreeSet::new();
        for item in raw {
            let item = validate_string(name, item)?;
            if scope.contains(&item) {
                return Err(invalid_token(format!(
                    "{name} value must not contain duplicates - {item} already present"
                )));
            }
            scope.insert(item);
        }
        Ok(scope.into_iter().collect())
    }
}

pub(super) fn claim_name_option(config: &'static str, value: String) -> Result<String, OAuthError> {
    let trimmed = java_trim(&value);
    if trimmed.is_empty() {
        return Err(OAuthError::InvalidOption {
            option: config,
            reason: "value must not be blank".to_owned(),
        });
    }
    if trimmed.len() == value.len() {
        return Ok(value);
    }
    Ok(trimmed.to_owned())
}

/// Kafka's `ClaimValidationUtils.validateString`.
pub(super) fn validate_string(name: &str, value: Option<&str>) -> Result<String, OAuthError> {
    let Some(value) = value else {
        return Err(invalid_token(format!("{name} value must be non-null")));
    };
    if value.is_empty() {
        return Err(invalid_token(format!("{name} value must be non-empty")));
    }
    let trimmed = java_trim(value);
    if trimmed.is_empty() {
        return Err(invalid_token(format!("{name} value must not contain only whitespace")));
    }
    Ok(trimmed.to_owned())
}

/// jose4j's `getNumericDateClaimValue`: a JSON number, in whole seconds (fractions truncated).
#[expect(clippy::cast_possible_truncation, reason = "Java's Number.longValue() saturates")]
pub(super) fn numeric_date(
    claims: &Map<String, Value>,
    name: &str,
) -> Result<Option<i64>, OAuthError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| i64::MAX))
            .or_else(|| n.as_f64().map(|f| f as i64))),
        Some(_) => Err(invalid_token(format!("the '{name}' claim is not a numeric date"))),
    }
}

/// Kafka's `SerializedJwt`: a trimmed, non-empty `header.payload.signature` with three non-blank
/// sections. The token itself is never quoted in the error.
pub(super) fn split_serialized_jwt(token: &str) -> Result<(&str, &str, &str), OAuthError> {
    let token = java_trim(token);
    if token.is_empty() {
        return Err(invalid_token(
            "empty jwt provided; expected three sections (header, payload, and signature)",
        ));
    }
    let splits = java_split_dots(token);
    let [header, payload, signature] = splits.as_slice() else {
        return Err(invalid_token(format!(
            "malformed jwt provided; expected three sections (header, payload, and signature), but {} sections provided",
            splits.len()
        )));
    };
    for (section, name) in [(header, "header"), (payload, "payload"), (signature, "signature")] {
        if java_trim(section).is_empty() {
            return Err(invalid_token(format!(
                "malformed jwt provided; expected at least three sections (header, payload, and signature), but {name} section missing"
            )));
        }
    }
    Ok((header, payload, signature))
}

pub(super) fn decode_json_object(
    section: &str,
    name: &str,
) -> Result<Map<String, Value>, OAuthError> {
    let bytes = decode_base64_lenient(section)
        .ok_or_else(|| invalid_token(format!("the jwt {name} is not base64url")))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(invalid_token(format!("the jwt {name} is not a json object"))),
        Err(e) => Err(invalid_token(format!("the jwt {name} is not json: {e}"))),
    }
}

/// The JWS `alg`, with `none` (Kafka's `DISALLOW_NONE`) and what we cannot verify refused.
pub(super) fn jws_algorithm(header: &Map<String, Value>) -> Result<Algorithm, OAuthError> {
    let Some(Value::String(alg)) = header.get("alg") else {
        return Err(invalid_token("the jws header has no alg"));
    };
    Ok(match alg.as_str() {
        "none" => {
            return Err(invalid_token(
                "the jws algorithm 'none' is not permitted for tokens checked against a jwks",
            ));
        }
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        other => {
            return Err(invalid_token(format!(
                "{other:?} is an unknown, unsupported or unavailable alg algorithm"
            )));
        }
    })
}

pub(super) fn algorithm_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        Algorithm::RS256 => "RS256",
        Algorithm::RS384 => "RS384",
        Algorithm::RS512 => "RS512",
        Algorithm::PS256 => "PS256",
        Algorithm::PS384 => "PS384",
        Algorithm::PS512 => "PS512",
        Algorithm::EdDSA => "EdDSA",
    }
}

/// Parses a JSON Web Key Set (RFC 7517 section 5), keeping the keys that can verify signatures.
pub(super) fn parse_jwks(contents: &str) -> Result<Vec<JwksKey>, OAuthError> {
    let value: Value = serde_json::from_str(contents).map_err(|e| {
        let location = format!("line {} column {}", e.line(), e.column());
        let full = e.to_string();
        let reason = full.strip_suffix(&format!(" at {location}")).unwrap_or(&full).to_owned();
        jwks_error(location, reason)
    })?;
    let Value::Object(top) = value else {
        return Err(jwks_error("the top level", "expected a json object with a \"keys\" array"));
    };
    let Some(Value::Array(entries)) = top.get("keys") else {
        return Err(jwks_error("\"keys\"", "expected an array of json web keys"));
    };
    let mut keys = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if let Some(key) = parse_jwk(index, entry)? {
            keys.push(key);
        }
    }
    Ok(keys)
}

pub(super) fn parse_jwk(index: usize, entry: &Value) -> Result<Option<JwksKey>, OAuthError> {
    let Value::Object(jwk) = entry else {
        return Err(jwks_error(format!("keys[{index}]"), "expected a json object"));
    };
    let kid = optional_string(jwk, index, None, "kid")?;
    let here = kid
        .as_ref()
        .map_or_else(|| format!("keys[{index}]"), |kid| format!("keys[{index}] (kid {kid:?})"));
    let Some(kty) = optional_string(jwk, index, kid.as_deref(), "kty")? else {
        return Err(jwks_error(here, "missing \"kty\""));
    };
    if optional_string(jwk, index, kid.as_deref(), "use")?.is_some_and(|key_use| key_use != "sig") {
        return Ok(None);
    }
    let alg = optional_string(jwk, index, kid.as_deref(), "alg")?;
    let required = |member: &str| -> Result<String, OAuthError> {
        optional_string(jwk, index, kid.as_deref(), member)?
            .ok_or_else(|| jwks_error(here.clone(), format!("missing {member:?}")))
    };
    let base64url = |member: &str, value: &str| -> Result<Vec<u8>, OAuthError> {
        URL_SAFE_LENIENT
            .decode(value)
            .map_err(|_| jwks_error(here.clone(), format!("{member:?} is not base64url")))
    };
    let (key_type, key) = match kty.as_str() {
        "RSA" => {
            let n = base64url("n", &required("n")?)?;
            let e = base64url("e", &required("e")?)?;
            if n.is_empty() || e.is_empty() {
                return Err(jwks_error(here, "empty rsa modulus or exponent"));
            }
            (KeyType::Rsa, DecodingKey::from_rsa_raw_components(&n, &e))
        }
        "EC" => {
            let crv = required("crv")?;
            let (key_type, coordinate_len) = match crv.as_str() {
                "P-256" => (KeyType::EcP256, 32),
                "P-384" => (KeyType::EcP384, 48),
                _ => return Ok(None),
            };
            let x = required("x")?;
            let y = required("y")?;
            if base64url("x", &x)?.len() != coordinate_len
                || base64url("y", &y)?.len() != coordinate_len
            {
                return Err(jwks_error(
                    here,
                    format!("\"x\" and \"y\" must be {coordinate_len} bytes for {crv}"),
                ));
            }
            let key = DecodingKey::from_ec_components(&x, &y)
                .map_err(|e| jwks_error(here.clone(), format!("bad ec key: {e}")))?;
            (key_type, key)
        }
        _ => return Ok(None),
    };
    Ok(Some(JwksKey { kid, key_type, alg, key }))
}

pub(super) fn optional_string(
    jwk: &Map<String, Value>,
    index: usize,
    kid: Option<&str>,
    member: &str,
) -> Result<Option<String>, OAuthError> {
    match jwk.get(member) {
        None => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(_) => {
            let here = kid.map_or_else(
                || format!("keys[{index}]"),
                |kid| format!("keys[{index}] (kid {kid:?})"),
            );
            Err(jwks_error(here, format!("{member:?} is not a string")))
        }
    }
}

/// The local path of a `sasl.oauthbearer.jwks.endpoint.url` such as `file:///etc/kafka/jwks.json`
/// (Kafka's `ConfigurationUtils.validateFile`; the path is taken raw, without percent-decoding,
/// as Kafka's `getRawPath`). Only `file:` URLs on the local host are accepted: seglog does not
/// fetch JWKS over HTTP.
pub(crate) fn parse_file_url(url: &str) -> Result<PathBuf, OAuthError> {
    let fail = |reason: &str| OAuthError::InvalidJwksUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = java_trim(url);
    let Some((scheme, rest)) = trimmed.split_once(':') else {
        return Err(fail(
            "the url has no protocol; only file: urls are supported (seglog does not fetch jwks over http)",
        ));
    };
    if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") {
        return Err(fail(
            "seglog does not fetch jwks over http; download the jwks and name the file with a file: url",
        ));
    }
    if !scheme.eq_ignore_ascii_case("file") {
        return Err(fail("only file: urls are supported (seglog does not fetch jwks over http)"));
    }
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let (host, path) = match authority_and_path.find('/') {
                Some(slash) => authority_and_path.split_at(slash),
                None => (authority_and_path, ""),
            };
            if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
                return Err(fail(
                    "the file: url names a remote host; only local files are supported",
                ));
            }
            path
        }
        None => rest,
    };
    if !path.starts_with('/') {
        return Err(fail("the file: url must hold an absolute path"));
    }
    if path.len() == 1 {
        return Err(fail("the file: url names a directory, not a file"));
    }
    Ok(PathBuf::from(path))
}
