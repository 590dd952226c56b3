//! SASL/PLAIN (RFC 4616) for the broker: plays the roles of Kafka's `PlainSaslServer` (the
//! message and its checks), `PlainServerCallbackHandler` (the password check against the
//! `user_<name>="<password>"` options of `PlainLoginModule`) and, for that one login module,
//! `JaasConfig` (the `sasl.jaas.config` grammar, a `java.io.StreamTokenizer` stream).
//!
//! Besides Kafka's JAAS value, [`PlainUsers::parse_file`] reads a seglog credentials file of
//! `name=password` lines.
//!
//! Departures from Kafka, all stricter: a message that is not UTF-8 is refused (Java decodes it
//! lossily); a JAAS option name that is neither a word nor a quoted string is an error (Kafka
//! stores it under a null key); a JAAS value whose login module is not `PlainLoginModule` is an
//! error (Kafka would accept it and then refuse every login).

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Kafka's PlainSaslServer whole: its own authenticate and listings serve the tests"
    )
)]

use std::collections::BTreeMap;
use std::fmt;
use std::iter::Peekable;
use std::str::Chars;

use subtle::{Choice, ConstantTimeEq};

/// The login module whose `user_*` options define the accepted users.
pub(crate) const PLAIN_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.plain.PlainLoginModule";

/// The login module of a SCRAM client (`ScramLoginModule`).
pub(crate) const SCRAM_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.scram.ScramLoginModule";

/// Kafka's `PlainServerCallbackHandler.JAAS_USER_PREFIX`.
const JAAS_USER_PREFIX: &str = "user_";

/// Compared against when the user is unknown, so that the comparison takes the same time.
const DUMMY_PASSWORD: &[u8] = b"seglog-plain-dummy-password-of-an-unknown-user";

/// Errors of SASL/PLAIN messages and of the configuration that lists the users. No variant
/// carries a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlainError {
    /// The message is not UTF-8.
    #[error("invalid sasl/plain response: not valid utf-8")]
    NotUtf8,
    /// Not `authzid NUL username NUL password` (Kafka counts at most 4 tokens).
    #[error("invalid sasl/plain response: expected 3 tokens, got {got}")]
    TokenCount { got: usize },
    #[error("authentication failed: username not specified")]
    UsernameNotSpecified,
    #[error("authentication failed: password not specified")]
    PasswordNotSpecified,
    /// Wrong password or unknown user: deliberately one error for both.
    #[error("authentication failed: invalid username or password")]
    InvalidCredentials,
    #[error(
        "authentication failed: client requested an authorization id that is different from username"
    )]
    AuthorizationIdMismatch,
    /// A JAAS value that does not follow Kafka's `JaasConfig` grammar.
    #[error("jaas config line {line} column {column}: {reason}")]
    JaasSyntax { line: usize, column: usize, reason: &'static str },
    /// A control flag other than required, requisite, sufficient or optional.
    #[error("jaas config line {line} column {column}: invalid login module control flag '{flag}'")]
    JaasControlFlag { line: usize, column: usize, flag: String },
    /// Kafka's `JaasContext.load`: a `sasl.jaas.config` value holds exactly one login module.
    #[error("jaas config contains {count} login modules, should be 1 module")]
    JaasModuleCount { count: usize },
    /// The login module is not `PlainLoginModule`.
    #[error(
        "jaas config login module is '{module}', expected org.apache.kafka.common.security.plain.PlainLoginModule"
    )]
    JaasNotPlainLoginModule { module: String },
    /// A client login whose module is not the mechanism's.
    #[error("jaas config login module is '{module}', expected {expected}")]
    JaasWrongLoginModule { module: String, expected: &'static str },
    /// A client login without its `username` or `password` option.
    #[error("jaas config of {module} has no {option} option, which the broker logs in with")]
    JaasMissingOption { module: String, option: &'static str },
    /// A credentials-file line that is not `name=password`.
    #[error("plain credentials file line {line}: {reason}")]
    FileSyntax { line: usize, reason: &'static str },
    /// A credentials-file user defined twice.
    #[error("plain credentials file line {line}: user '{username}' is already defined")]
    FileDuplicateUser { line: usize, username: String },
}

impl PlainError {
    /// The text Kafka's `PlainSaslServer` sends in the SaslAuthenticate response (all its errors
    /// are `SaslAuthenticationException`s); `None` for configuration errors, which never reach
    /// a client.
    pub(crate) fn client_message(&self) -> Option<String> {
        let text = match self {
            Self::NotUtf8 => "Invalid SASL/PLAIN response: not valid UTF-8".to_owned(),
            Self::TokenCount { got } => {
                format!("Invalid SASL/PLAIN response: expected 3 tokens, got {got}")
            }
            Self::UsernameNotSpecified => "Authentication failed: username not specified".to_owned(),
            Self::PasswordNotSpecified => "Authentication failed: password not specified".to_owned(),
            Self::InvalidCredentials => {
                "Authentication failed: Invalid username or password".to_owned()
            }
            Self::AuthorizationIdMismatch => "Authentication failed: Client requested an authorization id that is different from username".to_owned(),
            Self::JaasSyntax { .. }
            | Self::JaasControlFlag { .. }
            | Self::JaasModuleCount { .. }
            | Self::JaasNotPlainLoginModule { .. }
            | Self::JaasWrongLoginModule { .. }
            | Self::JaasMissingOption { .. }
            | Self::FileSyntax { .. }
            | Self::FileDuplicateUser { .. } => return None,
        };
        Some(text)
    }
}

/// The three fields of Kafka's `PlainSaslServer.evaluateResponse` message
/// (`[authzid] NUL authcid NUL passwd`). `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PlainCredentials {
    /// Empty when the client sent none.
    pub(crate) authzid: String,
    pub(crate) username: String,
    pub(crate) password: String,
}

impl fmt::Debug for PlainCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainCredentials")
            .field("authzid", &self.authzid)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Kafka's `PlainSaslServer.extractTokens` and its empty-field checks.
fn extract_tokens(message: &[u8]) -> Result<PlainCredentials, PlainError> {
    let text = std::str::from_utf8(message).map_err(|_| PlainError::NotUtf8)?;
    // Kafka stops looking after 4 tokens, so it reports at most "got 4".
    let tokens: Vec<&str> = text.splitn(4, '\0').collect();
    let [authzid, username, password] = tokens.as_slice() else {
        return Err(PlainError::TokenCount { got: tokens.len() });
    };
    if username.is_empty() {
        return Err(PlainError::UsernameNotSpecified);
    }
    if password.is_empty() {
        return Err(PlainError::PasswordNotSpecified);
    }
    Ok(PlainCredentials {
        authzid: (*authzid).to_owned(),
        username: (*username).to_owned(),
        password: (*password).to_owned(),
    })
}

/// Parses a SASL/PLAIN message with Kafka's rules: three NUL-separated UTF-8 tokens, username
/// and password not empty, authorization id empty or equal to the username.
pub(crate) fn parse_plain(message: &[u8]) -> Result<PlainCredentials, PlainError> {
    let credentials = extract_tokens(message)?;
    if !credentials.authzid.is_empty() && credentials.authzid != credentials.username {
        return Err(PlainError::AuthorizationIdMismatch);
    }
    Ok(credentials)
}

/// Kafka's `Utils.isEqualConstantTime`: the time depends only on the length of `provided`.
fn constant_time_eq(provided: &[u8], expected: &[u8]) -> Choice {
    if expected.is_empty() {
        return Choice::from(u8::from(provided.is_empty()));
    }
    let mut equal = (provided.len() as u64).ct_eq(&(expected.len() as u64));
    for (i, byte) in provided.iter().enumerate() {
        equal &= byte.ct_eq(&expected[i % expected.len()]);
    }
    equal
}

/// Kafka's `PlainServerCallbackHandler` over the `user_<name>="<password>"` options of
/// `PlainLoginModule` (or a seglog credentials file): the users a PLAIN listener accepts.
/// `Debug` shows only the user names.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct PlainUsers {
    users: BTreeMap<String, String>,
}

impl fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainUsers").field("users", &self.users.keys().collect::<Vec<_>>()).finish()
    }
}

impl PlainUsers {
    /// Reads Kafka's `sasl.jaas.config` value for `PlainLoginModule`, e.g.
    /// `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin"
    /// password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`.
    /// Only the `user_*` options define users; `username`/`password` are the broker's own
    /// client identity and are ignored here.
    pub(crate) fn parse_jaas(text: &str) -> Result<Self, PlainError> {
        let entries = parse_jaas_entries(text)?;
        let [entry] = entries.as_slice() else {
            return Err(PlainError::JaasModuleCount { count: entries.len() });
        };
        if entry.login_module != PLAIN_LOGIN_MODULE {
            return Err(PlainError::JaasNotPlainLoginModule { module: entry.login_module.clone() });
        }
        let users = entry
            .options
            .iter()
            .filter_map(|(key, value)| {
                key.strip_prefix(JAAS_USER_PREFIX).map(|name| (name.to_owned(), value.clone()))
            })
            .collect();
        Ok(Self { users })
    }

    /// The broker's own identity as a client (Kafka's `PlainLoginModule` and
    /// `ScramLoginModule` as a client's login): the `username` and `password` options of the
    /// one entry of `text`, whose login module must be `module`.
    pub(crate) fn client_login(
        text: &str,
        module: &'static str,
    ) -> Result<(String, String), PlainError> {
        let entries = parse_jaas_entries(text)?;
        let [entry] = entries.as_slice() else {
            return Err(PlainError::JaasModuleCount { count: entries.len() });
        };
        if entry.login_module != module {
            return Err(PlainError::JaasWrongLoginModule {
                module: entry.login_module.clone(),
                expected: module,
            });
        }
        let option = |option: &'static str| {
            entry.options.get(option).cloned().ok_or_else(|| PlainError::JaasMissingOption {
                module: entry.login_module.clone(),
                option,
            })
        };
        Ok((option("username")?, option("password")?))
    }

    /// Reads a credentials file: one `name=password` per line, split at the first `=`, with the
    /// whitespace around name and password trimmed; blank lines and lines starting with `#`
    /// are skipped. Errors give the line number, never the line.
    pub(crate) fn parse_file(text: &str) -> Result<Self, PlainError> {
        let mut users = BTreeMap::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some((name, password)) = trimmed.split_once('=') else {
                return Err(PlainError::FileSyntax { line, reason: "expected name=password" });
            };
            let (name, password) = (name.trim(), password.trim());
            if name.is_empty() {
                return Err(PlainError::FileSyntax { line, reason: "user name is empty" });
            }
            if password.is_empty() {
                return Err(PlainError::FileSyntax { line, reason: "password is empty" });
            }
            if users.insert(name.to_owned(), password.to_owned()).is_some() {
                return Err(PlainError::FileDuplicateUser { line, username: name.to_owned() });
            }
        }
        Ok(Self { users })
    }

    /// Kafka's `PlainServerCallbackHandler.authenticate`: true when `username` is a user and
    /// `password` its password. Constant time in the stored password: an unknown user is
    /// compared against a dummy. An empty password never matches (PLAIN refuses it anyway).
    pub(crate) fn verify(&self, username: &str, password: &str) -> bool {
        let (expected, known) = match self.users.get(username) {
            Some(expected) => (expected.as_bytes(), true),
            None => (DUMMY_PASSWORD, false),
        };
        let equal = constant_time_eq(password.as_bytes(), expected) & Choice::from(u8::from(known));
        bool::from(equal) && !password.is_empty()
    }

    /// Kafka's `PlainSaslServer.evaluateResponse`, in Kafka's order (tokens, empty username,
    /// empty password, password check, authorization id); returns the authorization id, which
    /// is the username.
    pub(crate) fn authenticate(&self, message: &[u8]) -> Result<String, PlainError> {
        let credentials = extract_tokens(message)?;
        if !self.verify(&credentials.username, &credentials.password) {
            return Err(PlainError::InvalidCredentials);
        }
        if !credentials.authzid.is_empty() && credentials.authzid != credentials.username {
            return Err(PlainError::AuthorizationIdMismatch);
        }
        Ok(credentials.username)
    }

    /// The user names, in order.
    pub(crate) fn usernames(&self) -> impl Iterator<Item = &str> {
        self.users.keys().map(String::as_str)
    }

    pub(crate) fn len(&self) -> usize {
        self.users.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

// ---- Kafka's JaasConfig: a java.io.StreamTokenizer stream -------------------------------------

/// A `javax.security.auth.login.AppConfigurationEntry` as Kafka's `JaasConfig` builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JaasEntry {
    login_module: String,
    control_flag: ControlFlag,
    options: BTreeMap<String, String>,
}

/// `AppConfigurationEntry.LoginModuleControlFlag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

impl ControlFlag {
    /// Case-insensitive, as Kafka's `loginModuleControlFlag`.
    fn parse(flag: &str) -> Option<Self> {
        match flag.to_ascii_uppercase().as_str() {
            "REQUIRED" => Some(Self::Required),
            "REQUISITE" => Some(Self::Requisite),
            "SUFFICIENT" => Some(Self::Sufficient),
            "OPTIONAL" => Some(Self::Optional),
            _ => None,
        }
    }
}

/// A StreamTokenizer token.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// `TT_WORD`.
    Word(String),
    /// A `"` or `'` string.
    Quoted(String),
    /// `TT_NUMBER` (digits, `.`, `-`); its value is never used and `sval` is null.
    Number,
    /// An ordinary character such as `=` or `;`.
    Char(char),
    Eof,
}

impl Token {
    /// StreamTokenizer's `sval`: set for words and quoted strings only.
    fn sval(&self) -> Option<&str> {
        match self {
            Self::Word(s) | Self::Quoted(s) => Some(s),
            Self::Number | Self::Char(_) | Self::Eof => None,
        }
    }
}

/// A token with the 1-based line and column where it starts.
#[derive(Debug)]
struct Located {
    token: Token,
    line: usize,
    column: usize,
}

/// `java.io.StreamTokenizer` configured as Kafka's `JaasConfig` does: default syntax (letters
/// and U+00A0.. as word characters, `"`/`'` quotes, `/` comment character, numbers parsed),
/// plus `//` and `/* */` comments and `-`, `_`, `$` as word characters.
struct JaasLexer<'a> {
    chars: Peekable<Chars<'a>>,
    line: usize,
    column: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '-' | '_' | '$') || u32::from(c) >= 0xA0
}

fn is_number_char(c: char) -> bool {
    c.is_ascii_digit() || matches!(c, '.' | '-')
}

impl<'a> JaasLexer<'a> {
    fn new(text: &'a str) -> Self {
        Self { chars: text.chars().peekable(), line: 1, column: 1 }
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn skip_to_end_of_line(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' || c == '\r' {
                return;
            }
            self.bump();
        }
    }

    /// Skips a `/* ... */` comment; false when the input ends inside it.
    fn skip_block_comment(&mut self) -> bool {
        let mut previous = '\0';
        while let Some(c) = self.bump() {
            if previous == '*' && c == '/' {
                return true;
            }
            previous = c;
        }
        false
    }

    fn next_token(&mut self) -> Located {
        loop {
            while self.peek().is_some_and(|c| u32::from(c) <= 0x20) {
                self.bump();
            }
            let (line, column) = (self.line, self.column);
            let located = |token| Located { token, line, column };
            let Some(c) = self.bump() else {
                return located(Token::Eof);
            };
            // StreamTokenizer tests "digit" before "alpha", so '-' starts a number (or is an
            // ordinary character) even though Kafka made it a word character.
            if is_number_char(c) {
                if c == '-' && !self.peek().is_some_and(|d| d == '.' || d.is_ascii_digit()) {
                    return located(Token::Char('-'));
                }
                let mut seen_dot = c == '.';
                while let Some(d) = self.peek() {
                    if d.is_ascii_digit() {
                        self.bump();
                    } else if d == '.' && !seen_dot {
                        seen_dot = true;
                        self.bump();
                    } else {
                        break;
                    }
                }
                return located(Token::Number);
            }
            if is_word_char(c) {
                let mut word = String::from(c);
                while let Some(d) = self.peek().filter(|&d| is_word_char(d) || is_number_char(d)) {
                    word.push(d);
                    self.bump();
                }
                return located(Token::Word(word));
            }
            if c == '"' || c == '\'' {
                return located(Token::Quoted(self.quoted(c)));
            }
            if c == '/' {
                // `/*`; else `//` or a lone `/` (the comment character), where StreamTokenizer
                // drops the character after the `/` and then the rest of that line.
                let block = self.bump() == Some('*');
                if !block {
                    self.skip_to_end_of_line();
                } else if !self.skip_block_comment() {
                    return Located { token: Token::Eof, line: self.line, column: self.column };
                }
                continue;
            }
            return located(Token::Char(c));
        }
    }

    /// The rest of a quoted string, with StreamTokenizer's escapes (`\n`, `\t`, `\"`, `\\`,
    /// octal `\101`, ...). Like StreamTokenizer, the string also ends at a line end or the end of
    /// the input.
    fn quoted(&mut self, quote: char) -> String {
        let mut value = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' || c == '\r' {
                break;
            }
            self.bump();
            if c == quote {
                break;
            }
            if c != '\\' {
                value.push(c);
                continue;
            }
            let Some(escaped) = self.bump() else {
                break;
            };
            if let Some(first) = escaped.to_digit(8) {
                let mut code = first;
                if let Some(second) = self.peek().and_then(|d| d.to_digit(8)) {
                    self.bump();
                    code = code * 8 + second;
                    if first <= 3
                        && let Some(third) = self.peek().and_then(|d| d.to_digit(8))
                    {
                        self.bump();
                        code = code * 8 + third;
                    }
                }
                value.extend(char::from_u32(code));
                continue;
            }
            value.push(match escaped {
                'a' => '\u{7}',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\u{b}',
                other => other,
            });
        }
        value
    }
}

fn jaas_error(at: &Located, reason: &'static str) -> PlainError {
    PlainError::JaasSyntax { line: at.line, column: at.column, reason }
}

/// Kafka's `JaasConfig` constructor: every `<login module> <flag> [<key>=<value>]* ;` entry.
fn parse_jaas_entries(text: &str) -> Result<Vec<JaasEntry>, PlainError> {
    let mut lexer = JaasLexer::new(text);
    let mut entries = Vec::new();
    loop {
        let first = lexer.next_token();
        if first.token == Token::Eof {
            break;
        }
        entries.push(parse_jaas_entry(&first, &mut lexer)?);
    }
    if entries.is_empty() {
        return Err(PlainError::JaasSyntax {
            line: lexer.line,
            column: lexer.column,
            reason: "login module not specified",
        });
    }
    Ok(entries)
}

/// Kafka's `JaasConfig.parseAppConfigurationEntry`.
fn parse_jaas_entry(first: &Located, lexer: &mut JaasLexer<'_>) -> Result<JaasEntry, PlainError> {
    let login_module = first
        .token
        .sval()
        .filter(|name| !name.is_empty())
        .ok_or_else(|| jaas_error(first, "login module name not specified"))?
        .to_owned();
    let flag = lexer.next_token();
    if flag.token == Token::Eof {
        return Err(jaas_error(&flag, "login module control flag not specified"));
    }
    let flag_text = flag
        .token
        .sval()
        .ok_or_else(|| jaas_error(&flag, "login module control flag is not available"))?;
    let control_flag =
        ControlFlag::parse(flag_text).ok_or_else(|| PlainError::JaasControlFlag {
            line: flag.line,
            column: flag.column,
            flag: flag_text.to_owned(),
        })?;
    let mut options = BTreeMap::new();
    loop {
        let key = lexer.next_token();
        match key.token {
            Token::Char(';') => break,
            Token::Eof => return Err(jaas_error(&key, "entry not terminated by semi-colon")),
            _ => {}
        }
        let name = key
            .token
            .sval()
            .ok_or_else(|| jaas_error(&key, "option name must be a word or a quoted string"))?
            .to_owned();
        if lexer.next_token().token != Token::Char('=') {
            return Err(jaas_error(&key, "value not specified for option"));
        }
        let value = lexer.next_token();
        let value =
            value.token.sval().ok_or_else(|| jaas_error(&key, "value not specified for option"))?;
        // A HashMap in Kafka: the last of duplicate options wins.
        options.insert(name, value.to_owned());
    }
    Ok(JaasEntry { login_module, control_flag, options })
}

#[cfg(test)]
mod tests {
    //! Ported from Kafka: PlainSaslServerTest (noAuthorizationIdSpecified,
    //! authorizationIdEqualsAuthenticationId, authorizationIdNotEqualsAuthenticationId,
    //! emptyTokens) and JaasContextTest (testConfigNoOptions, testControlFlag,
    //! testSingleOption, testMultipleOptions, testQuotedOptionValue, testQuotedOptionName,
    //! testMultipleLoginModules, testMissingLoginModule, testMissingControlFlag,
    //! testMissingOptionValue, testMissingSemicolon, testNumericOptionWithoutQuotes,
    //! testInvalidControlFlag, testNumericOptionWithQuotes).

    use super::*;

    const USER_A: &str = "userA";
    const PASSWORD_A: &str = "passwordA";
    const USER_B: &str = "userB";
    const PASSWORD_B: &str = "passwordB";

    /// PlainSaslServerTest's setUp: user_userA / user_userB options.
    fn users() -> PlainUsers {
        PlainUsers::parse_jaas(&format!(
            "{PLAIN_LOGIN_MODULE} required user_{USER_A}=\"{PASSWORD_A}\" user_{USER_B}=\"{PASSWORD_B}\";"
        ))
        .expect("test jaas config")
    }

    fn sasl_message(authzid: &str, username: &str, password: &str) -> Vec<u8> {
        format!("{authzid}\0{username}\0{password}").into_bytes()
    }

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn entry(login_module: &str, control_flag: ControlFlag, pairs: &[(&str, &str)]) -> JaasEntry {
        JaasEntry { login_module: login_module.to_owned(), control_flag, options: options(pairs) }
    }

    // ---- PlainSaslServerTest ----

    #[test]
    fn no_authorization_id_specified() {
        assert_eq!(
            users().authenticate(&sasl_message("", USER_A, PASSWORD_A)),
            Ok(USER_A.to_owned())
        );
    }

    #[test]
    fn authorization_id_equals_authentication_id() {
        assert_eq!(
            users().authenticate(&sasl_message(USER_A, USER_A, PASSWORD_A)),
            Ok(USER_A.to_owned())
        );
    }

    #[test]
    fn authorization_id_not_equals_authentication_id() {
        let error =
            users().authenticate(&sasl_message(USER_B, USER_A, PASSWORD_A)).expect_err("mismatch");
        assert_eq!(error, PlainError::AuthorizationIdMismatch);
        assert_eq!(
            error.client_message().as_deref(),
            Some(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        );
        assert_eq!(
            parse_plain(&sasl_message(USER_B, USER_A, PASSWORD_A)),
            Err(PlainError::AuthorizationIdMismatch)
        );
    }

    #[test]
    fn empty_tokens() {
        let cases: [(&[u8], &str); 8] = [
            (b"\0\0", "Authentication failed: username not specified"),
            (b"\0\0p", "Authentication failed: username not specified"),
            (b"\0u\0", "Authentication failed: password not specified"),
            (b"a\0\0", "Authentication failed: username not specified"),
            (b"a\0\0p", "Authentication failed: username not specified"),
            (b"a\0u\0", "Authentication failed: password not specified"),
            (b"a\0u\0p\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
            (b"\0u", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        ];
        for (message, kafka_text) in cases {
            let error = users().authenticate(message).expect_err("refused");
            assert_eq!(error.client_message().as_deref(), Some(kafka_text), "{message:?}");
            assert_eq!(error.to_string(), kafka_text.to_lowercase(), "{message:?}");
            assert_eq!(parse_plain(message), Err(error));
        }
        // Kafka stops counting at 4.
        assert_eq!(parse_plain(b"a\0b\0c\0d\0e\0f"), Err(PlainError::TokenCount { got: 4 }));
        assert_eq!(parse_plain(b""), Err(PlainError::TokenCount { got: 1 }));
    }

    #[test]
    fn wrong_password_and_unknown_user_fail_alike() {
        let wrong = users().authenticate(&sasl_message("", USER_A, PASSWORD_B)).expect_err("wrong");
        let unknown =
            users().authenticate(&sasl_message("", "nobody", PASSWORD_A)).expect_err("unknown");
        assert_eq!(wrong, PlainError::InvalidCredentials);
        assert_eq!(wrong, unknown);
        assert_eq!(
            unknown.client_message().as_deref(),
            Some("Authentication failed: Invalid username or password")
        );
        // Kafka checks the password before the authorization id.
        assert_eq!(
            users().authenticate(&sasl_message(USER_B, USER_A, "wrong")),
            Err(PlainError::InvalidCredentials)
        );
    }

    #[test]
    fn parse_plain_fields_and_utf8() {
        let parsed = parse_plain("\0j\u{f6}rg\0p\u{e4}ss\0word".as_bytes());
        assert_eq!(parsed.map(|c| c.password.len()), Err(PlainError::TokenCount { got: 4 }));
        let parsed = parse_plain("\0j\u{f6}rg\0p\u{e4}ss word".as_bytes()).expect("utf-8");
        assert_eq!(
            parsed,
            PlainCredentials {
                authzid: String::new(),
                username: "j\u{f6}rg".to_owned(),
                password: "p\u{e4}ss word".to_owned()
            }
        );
        assert_eq!(parse_plain(b"\0user\0pass\xff"), Err(PlainError::NotUtf8));
    }

    #[test]
    fn verify_is_exact() {
        let users = users();
        assert!(users.verify(USER_A, PASSWORD_A));
        assert!(users.verify(USER_B, PASSWORD_B));
        for (user, password) in [
            (USER_A, PASSWORD_B),
            (USER_A, "passwordA "),
            (USER_A, "passwordAx"),
            (USER_A, "password"),
            (USER_A, ""),
            (USER_A, "passwordApasswordA"),
            ("usera", PASSWORD_A),
            ("", ""),
            ("nobody", "seglog-plain-dummy-password-of-an-unknown-user"),
        ] {
            assert!(!users.verify(user, password), "{user}/{password}");
        }
    }

    #[test]
    fn constant_time_eq_matches_kafka_is_equal_constant_time() {
        let eq = |a: &[u8], b: &[u8]| bool::from(constant_time_eq(a, b));
        assert!(eq(b"abc", b"abc"));
        assert!(!eq(b"abc", b"abd"));
        assert!(!eq(b"ab", b"abc"));
        assert!(!eq(b"abca", b"abc"));
        assert!(!eq(b"aaaa", b"a"));
        assert!(eq(b"", b""));
        assert!(!eq(b"a", b""));
        assert!(!eq(b"", b"a"));
    }

    // ---- JAAS ----

    #[test]
    fn jaas_kafka_example() {
        let users = PlainUsers::parse_jaas(
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" \
             password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";",
        )
        .expect("kafka's documented example");
        assert_eq!(users.usernames().collect::<Vec<_>>(), ["admin", "alice"]);
        assert_eq!(users.len(), 2);
        assert!(users.verify("admin", "admin-secret"));
        assert!(users.verify("alice", "alice-secret"));
        assert!(!users.verify("alice", "admin-secret"));
    }

    #[test]
    fn jaas_several_users_escapes_and_comments() {
        let text = r#"
            // the broker's PLAIN users
            org.apache.kafka.common.security.plain.PlainLoginModule REQUIRED
                user_bob="say \"hi\"" /* a block
                comment */ user_carol='single \'quoted\''
                user_dave="back\\slash\ttab\101\60z" user_erin=unquoted-word_1.2
                "user_frank"="quoted key" user_gina="" user_bob="last one wins"
                user_h$x = "spaced = fine, commas too" ;
        "#;
        let users = PlainUsers::parse_jaas(text).expect("valid");
        assert_eq!(
            users.usernames().collect::<Vec<_>>(),
            ["bob", "carol", "dave", "erin", "frank", "gina", "h$x"]
        );
        assert!(users.verify("bob", "last one wins"));
        assert!(users.verify("carol", "single 'quoted'"));
        assert!(users.verify("dave", "back\\slash\ttabA0z"));
        assert!(users.verify("erin", "unquoted-word_1.2"));
        assert!(users.verify("frank", "quoted key"));
        assert!(!users.verify("gina", ""));
        assert!(users.verify("h$x", "spaced = fine, commas too"));
        let entries = parse_jaas_entries(r#"a.B required k="say \"hi\"";"#).expect("entry");
        assert_eq!(entries, [entry("a.B", ControlFlag::Required, &[("k", "say \"hi\"")])]);
    }

    #[test]
    fn jaas_context_test_valid_cases() {
        // testConfigNoOptions, testSingleOption, testMultipleOptions
        assert_eq!(
            parse_jaas_entries("test.testConfigNoOptions required;").expect("no options"),
            [entry("test.testConfigNoOptions", ControlFlag::Required, &[])]
        );
        assert_eq!(
            parse_jaas_entries("test.testSingleOption requisite propName=propValue;").expect("one"),
            [entry("test.testSingleOption", ControlFlag::Requisite, &[("propName", "propValue")])]
        );
        let many =
            (0..10).map(|i| format!(" propName{i}=propValue{i}")).collect::<Vec<_>>().concat();
        let parsed = parse_jaas_entries(&format!("test.testMultipleOptions sufficient{many};"))
            .expect("ten");
        assert_eq!(parsed[0].options.len(), 10);
        assert_eq!(parsed[0].options["propName7"], "propValue7");
        // testControlFlag
        for (text, flag) in [
            ("required", ControlFlag::Required),
            ("requisite", ControlFlag::Requisite),
            ("Sufficient", ControlFlag::Sufficient),
            ("OPTIONAL", ControlFlag::Optional),
        ] {
            let parsed =
                parse_jaas_entries(&format!("test.testControlFlag {text} propName=propValue;"));
            assert_eq!(parsed.expect("flag")[0].control_flag, flag);
        }
        // testQuotedOptionValue, testQuotedOptionName, testNumericOptionWithQuotes
        assert_eq!(
            parse_jaas_entries(
                "test.testQuotedOptionValue required propName=\"prop value\" propName2=\"value1 = 1, value2 = 2\";"
            )
            .expect("quoted values")[0]
                .options,
            options(&[("propName", "prop value"), ("propName2", "value1 = 1, value2 = 2")])
        );
        assert_eq!(
            parse_jaas_entries("test.testQuotedOptionName required \"prop name\"=propValue;")
                .expect("quoted name")[0]
                .options,
            options(&[("prop name", "propValue")])
        );
        assert_eq!(
            parse_jaas_entries("test.testNumericOptionWithQuotes required option1=\"3\";")
                .expect("quoted number")[0]
                .options,
            options(&[("option1", "3")])
        );
        // testMultipleLoginModules: parsed, but a sasl.jaas.config value must hold one.
        let three = " test.Module0 required index=Index0 module=Module0; test.Module1 required index=Index1 module=Module1; test.Module2 required index=Index2 module=Module2;";
        let parsed = parse_jaas_entries(three).expect("three modules");
        assert_eq!(parsed.len(), 3);
        assert_eq!(
            parsed[2],
            entry(
                "test.Module2",
                ControlFlag::Required,
                &[("index", "Index2"), ("module", "Module2")]
            )
        );
        assert_eq!(PlainUsers::parse_jaas(three), Err(PlainError::JaasModuleCount { count: 3 }));
    }

    #[test]
    fn jaas_context_test_invalid_cases() {
        let syntax = |line, column, reason| PlainError::JaasSyntax { line, column, reason };
        let cases = [
            // testMissingLoginModule: "required" is read as the module, "option1" as the flag.
            (
                "  required option1=value1;",
                PlainError::JaasControlFlag { line: 1, column: 12, flag: "option1".to_owned() },
            ),
            // testMissingControlFlag
            (
                "test.loginModule option1=value1;",
                PlainError::JaasControlFlag { line: 1, column: 18, flag: "option1".to_owned() },
            ),
            // testMissingOptionValue
            ("loginModule required option1;", syntax(1, 22, "value not specified for option")),
            // testMissingSemicolon
            (
                "test.testMissingSemicolon required option1=value1",
                syntax(1, 50, "entry not terminated by semi-colon"),
            ),
            // testNumericOptionWithoutQuotes
            (
                "test.testNumericOptionWithoutQuotes required option1=3;",
                syntax(1, 46, "value not specified for option"),
            ),
            // testInvalidControlFlag
            (
                "test.testInvalidControlFlag { option1=3;",
                syntax(1, 29, "login module control flag is not available"),
            ),
            ("", syntax(1, 1, "login module not specified")),
            ("  // only a comment\n", syntax(2, 1, "login module not specified")),
            ("a.B", syntax(1, 4, "login module control flag not specified")),
            ("; a required;", syntax(1, 1, "login module name not specified")),
            ("\"\" required;", syntax(1, 1, "login module name not specified")),
            ("a.B required\n  user_x=;", syntax(2, 3, "value not specified for option")),
            (
                "a.B required\n  123=abc;",
                syntax(2, 3, "option name must be a word or a quoted string"),
            ),
            ("a.B required /* never closed", syntax(1, 29, "entry not terminated by semi-colon")),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_jaas_entries(text), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn jaas_unterminated_quote_ends_at_line_end() {
        // StreamTokenizer (so Kafka) ends an unterminated string at the line end, silently.
        assert_eq!(
            parse_jaas_entries("a.B required user_x=\"open\n;"),
            Ok(vec![entry("a.B", ControlFlag::Required, &[("user_x", "open")])])
        );
        assert_eq!(
            parse_jaas_entries("a.B required user_x=\"open"),
            Err(PlainError::JaasSyntax {
                line: 1,
                column: 26,
                reason: "entry not terminated by semi-colon"
            })
        );
    }

    #[test]
    fn jaas_must_be_plain_login_module() {
        assert_eq!(
            PlainUsers::parse_jaas(
                "org.apache.kafka.common.security.scram.ScramLoginModule required user_a=\"b\";"
            ),
            Err(PlainError::JaasNotPlainLoginModule {
                module: "org.apache.kafka.common.security.scram.ScramLoginModule".to_owned()
            })
        );
        let no_users = PlainUsers::parse_jaas(&format!(
            "{PLAIN_LOGIN_MODULE} required username=\"admin\" password=\"x\";"
        ))
        .expect("no user_ options");
        assert!(no_users.is_empty());
        assert!(!no_users.verify("admin", "x"));
    }

    #[test]
    fn jaas_errors_do_not_show_passwords() {
        // An unquoted password with a space: the second half reads as an option name.
        let error =
            PlainUsers::parse_jaas(&format!("{PLAIN_LOGIN_MODULE} required user_a=top secret;"))
                .expect_err("bad");
        assert_eq!(
            error,
            PlainError::JaasSyntax {
                line: 1,
                column: 77,
                reason: "value not specified for option"
            }
        );
        assert!(!error.to_string().contains("secret"), "{error}");
        assert_eq!(error.client_message(), None);
    }

    // ---- credentials file ----

    #[test]
    fn file_users() {
        let users = PlainUsers::parse_file(
            "# seglog PLAIN users\n\nadmin=admin-secret\r\n  alice = alice secret = with equals  \n   # indented comment\nbob=#not-a-comment\n",
        )
        .expect("valid file");
        assert_eq!(users.usernames().collect::<Vec<_>>(), ["admin", "alice", "bob"]);
        assert!(users.verify("admin", "admin-secret"));
        assert!(users.verify("alice", "alice secret = with equals"));
        assert!(users.verify("bob", "#not-a-comment"));
        assert!(PlainUsers::parse_file("").expect("empty").is_empty());
    }

    #[test]
    fn file_errors_give_line_numbers_not_passwords() {
        let cases = [
            (
                "admin=a\njustapassword\n",
                PlainError::FileSyntax { line: 2, reason: "expected name=password" },
            ),
            ("# c\n\n=hunter2\n", PlainError::FileSyntax { line: 3, reason: "user name is empty" }),
            ("admin=  \n", PlainError::FileSyntax { line: 1, reason: "password is empty" }),
            (
                "admin=hunter2\nbob=b\nadmin=hunter3\n",
                PlainError::FileDuplicateUser { line: 3, username: "admin".to_owned() },
            ),
        ];
        for (text, expected) in cases {
            let error = PlainUsers::parse_file(text).expect_err("invalid");
            assert!(
                !error.to_string().contains("hunter")
                    && !error.to_string().contains("justapassword"),
                "{error}"
            );
            assert_eq!(error, expected, "{text:?}");
        }
        assert_eq!(
            PlainError::FileDuplicateUser { line: 3, username: "admin".to_owned() }.to_string(),
            "plain credentials file line 3: user 'admin' is already defined"
        );
    }

    #[test]
    fn debug_hides_passwords() {
        let users = PlainUsers::parse_file("admin=hunter2\nalice=wonderland\n").expect("file");
        assert_eq!(format!("{users:?}"), "PlainUsers { users: [\"admin\", \"alice\"] }");
        let credentials = parse_plain(b"\0admin\0hunter2").expect("parsed");
        assert_eq!(
            format!("{credentials:?}"),
            "PlainCredentials { authzid: \"\", username: \"admin\", password: \"<redacted>\" }"
        );
    }
}
