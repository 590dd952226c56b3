//! The security store edited offline (what `kafka-acls.sh` and `kafka-configs.sh
//! --entity-type users` do against a cluster, for a stopped seglog broker's directory): list,
//! add and remove ACLs and SCRAM users. The broker reads the same file at start.

use seglog_storage::manager::LogManager;

use super::acl::{AclBinding, AclBindingFilter, validate_new_acl};
use super::runtime::{binding_of, credential_of, stored_acl};
use super::scram::{ScramCredential, ScramMechanism, random_salt};
use super::store::{SECURITY_FILE, SECURITY_FILE_BYTES_MAX, SecurityState, StoredScram};

/// Why an offline change could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The store could not be read or written.
    #[error("{SECURITY_FILE}")]
    Storage(#[from] seglog_storage::Error),
    /// The store is malformed, or a value given is not valid.
    #[error("{0}")]
    Invalid(String),
}

/// One ACL as text fields, Kafka's names (`Topic`, `orders`, `Literal`, `User:alice`, `*`,
/// `Read`, `Allow`), case-insensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclSpec {
    pub resource_type: String,
    pub resource_name: String,
    pub pattern_type: String,
    pub principal: String,
    pub host: String,
    pub operation: String,
    pub permission: String,
}

fn parse<T: std::str::FromStr>(what: &str, value: &str) -> Result<T, AdminError> {
    value.parse().map_err(|_| AdminError::Invalid(format!("{value:?} is not a valid {what}")))
}

impl AclSpec {
    fn binding(&self) -> Result<AclBinding, AdminError> {
        Ok(AclBinding {
            resource_type: parse("resource type", &self.resource_type)?,
            resource_name: self.resource_name.clone(),
            pattern_type: parse("pattern type", &self.pattern_type)?,
            principal: self.principal.clone(),
            host: self.host.clone(),
            operation: parse("operation", &self.operation)?,
            permission: parse("permission type", &self.permission)?,
        })
    }
}

fn load(manager: &LogManager) -> Result<SecurityState, AdminError> {
    match manager.read_metadata_file(SECURITY_FILE, SECURITY_FILE_BYTES_MAX)? {
        Some(text) => SecurityState::parse(&text).map_err(|e| AdminError::Invalid(e.to_string())),
        None => Ok(SecurityState::default()),
    }
}

fn save(manager: &LogManager, state: &SecurityState) -> Result<(), AdminError> {
    Ok(manager.write_metadata_file(SECURITY_FILE, state.to_text().as_bytes())?)
}

fn bindings(state: &SecurityState) -> Result<Vec<AclBinding>, AdminError> {
    state.acls.iter().map(|stored| binding_of(stored).map_err(AdminError::Invalid)).collect()
}

/// Every ACL, as Kafka's `AclBinding.toString` prints it, sorted.
pub fn list_acls(manager: &LogManager) -> Result<Vec<String>, AdminError> {
    let mut out: Vec<AclBinding> = bindings(&load(manager)?)?;
    out.sort();
    Ok(out.iter().map(ToString::to_string).collect())
}

/// Adds ACLs (each checked as CreateAcls checks it); returns how many were new.
pub fn add_acls(manager: &LogManager, specs: &[AclSpec]) -> Result<usize, AdminError> {
    let mut state = load(manager)?;
    let mut added = 0;
    for spec in specs {
        let binding = spec.binding()?;
        validate_new_acl(&binding).map_err(|e| AdminError::Invalid(format!("{binding}: {e}")))?;
        let stored = stored_acl(&binding);
        if !state.acls.contains(&stored) {
            state.acls.push(stored);
            added += 1;
        }
    }
    save(manager, &state)?;
    Ok(added)
}

/// Removes the ACLs equal to `spec`, where an empty field matches anything (a filter);
/// returns those removed, as Kafka prints them.
pub fn remove_acls(manager: &LogManager, spec: &AclSpec) -> Result<Vec<String>, AdminError> {
    let field = |value: &str| (!value.is_empty()).then(|| value.to_owned());
    let filter = AclBindingFilter {
        resource_type: if spec.resource_type.is_empty() {
            super::acl::ResourceType::Any
        } else {
            parse("resource type", &spec.resource_type)?
        },
        resource_name: field(&spec.resource_name),
        pattern_type: if spec.pattern_type.is_empty() {
            super::acl::PatternType::Any
        } else {
            parse("pattern type", &spec.pattern_type)?
        },
        principal: field(&spec.principal),
        host: field(&spec.host),
        operation: if spec.operation.is_empty() {
            super::acl::AclOperation::Any
        } else {
            parse("operation", &spec.operation)?
        },
        permission: if spec.permission.is_empty() {
            super::acl::AclPermissionType::Any
        } else {
            parse("permission type", &spec.permission)?
        },
    };
    let mut state = load(manager)?;
    let all = bindings(&state)?;
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    for (stored, binding) in state.acls.into_iter().zip(all) {
        if filter.matches(&binding) {
            removed.push(binding.to_string());
        } else {
            kept.push(stored);
        }
    }
    state.acls = kept;
    save(manager, &state)?;
    Ok(removed)
}

/// Every SCRAM credential: user, mechanism and iterations.
pub fn list_scram_users(manager: &LogManager) -> Result<Vec<(String, String, u32)>, AdminError> {
    let state = load(manager)?;
    let mut out: Vec<(String, String, u32)> =
        state.scram.iter().map(|s| (s.user.clone(), s.mechanism.clone(), s.iterations)).collect();
    out.sort();
    Ok(out)
}

/// Adds or replaces a user's SCRAM credential for `mechanism`, from the password (which is
/// not kept: only the salt, stored key, server key and iterations are).
pub fn add_scram_user(
    manager: &LogManager,
    user: &str,
    mechanism: &str,
    password: &str,
    iterations: u32,
) -> Result<(), AdminError> {
    let mechanism = ScramMechanism::from_name(mechanism).ok_or_else(|| {
        AdminError::Invalid(format!("{mechanism:?} is not SCRAM-SHA-256 or SCRAM-SHA-512"))
    })?;
    if user.is_empty() {
        return Err(AdminError::Invalid("the user name must not be empty".to_owned()));
    }
    let iterations = mechanism
        .check_iterations(i32::try_from(iterations).unwrap_or(i32::MAX))
        .map_err(|e| AdminError::Invalid(e.to_string()))?;
    let salt = random_salt().map_err(|e| AdminError::Invalid(e.to_string()))?;
    let credential = ScramCredential::from_password(mechanism, password, &salt, iterations);
    let mut state = load(manager)?;
    for stored in &state.scram {
        credential_of(stored).map_err(AdminError::Invalid)?;
    }
    state.scram.retain(|s| !(s.user == user && s.mechanism == mechanism.name()));
    state.scram.push(StoredScram::encode(
        user,
        mechanism.name(),
        &credential.salt,
        &credential.stored_key,
        &credential.server_key,
        credential.iterations,
    ));
    save(manager, &state)
}

/// Removes a user's SCRAM credentials (one mechanism, or all); returns how many.
pub fn remove_scram_user(
    manager: &LogManager,
    user: &str,
    mechanism: Option<&str>,
) -> Result<usize, AdminError> {
    let mut state = load(manager)?;
    let before = state.scram.len();
    state.scram.retain(|s| !(s.user == user && mechanism.is_none_or(|m| s.mechanism == m)));
    let removed = before - state.scram.len();
    save(manager, &state)?;
    Ok(removed)
}
