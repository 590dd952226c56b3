//! The security APIs (Kafka's `KafkaApis` / `ControllerApis` handlers for them): CreateAcls,
//! DescribeAcls and DeleteAcls over the authorizer's durable ACLs; DescribeUserScramCredentials
//! and AlterUserScramCredentials (Kafka's `ScramControlManager` checks); DescribeClientQuotas
//! and AlterClientQuotas; and SaslHandshake / SaslAuthenticate reaching a handler, which means
//! a non-SASL listener or an authenticated connection (ILLEGAL_SASL_STATE, as Kafka answers).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest,
    DeleteAclsResponse, DescribeAclsRequest, DescribeAclsResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse, SaslAuthenticateResponse, SaslHandshakeResponse,
};

use super::{blocking, str_bytes};
use crate::Broker;
use crate::error::Error;
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::{
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, CLUSTER_NAME, PatternType,
    ResourceType,
};
use crate::security::quota::{ClientQuotaEntity, FilterComponent};
use crate::security::scram::{ScramCredential, ScramMechanism};

const NONE: i16 = 0;

fn cluster_allowed(broker: &Broker, session: &Session, operation: AclOperation) -> bool {
    broker.security.authorize(session, operation, ResourceType::Cluster, CLUSTER_NAME)
}

const SECURITY_DISABLED: &str = "No Authorizer is configured on the broker";

/// SaslHandshake outside a SASL exchange.
pub(crate) fn sasl_handshake(version: i16) -> Result<Reply, Error> {
    let mut response = SaslHandshakeResponse::default();
    response.error_code = ResponseError::IllegalSaslState.code();
    encode(&response, version)
}

/// SaslAuthenticate outside a SASL exchange.
pub(crate) fn sasl_authenticate(version: i16) -> Result<Reply, Error> {
    let mut response = SaslAuthenticateResponse::default();
    response.error_code = ResponseError::IllegalSaslState.code();
    response.error_message =
        Some(str_bytes("SaslAuthenticate request received after successful authentication"));
    encode(&response, version)
}

fn filter_of(
    resource_type: i8,
    name: Option<&str>,
    pattern_type: i8,
    principal: Option<&str>,
    host: Option<&str>,
    operation: i8,
    permission: i8,
) -> AclBindingFilter {
    AclBindingFilter {
        resource_type: ResourceType::from_code(resource_type).unwrap_or(ResourceType::Unknown),
        resource_name: name.map(str::to_owned),
        pattern_type: PatternType::from_code(pattern_type).unwrap_or(PatternType::Unknown),
        principal: principal.map(str::to_owned),
        host: host.map(str::to_owned),
        operation: AclOperation::from_code(operation).unwrap_or(AclOperation::Unknown),
        permission: AclPermissionType::from_code(permission).unwrap_or(AclPermissionType::Unknown),
    }
}

/// CreateAcls (CLUSTER ALTER).
pub(crate) async fn create_acls(
    broker: &Arc<Broker>,
    session: &Session,
    request: CreateAclsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let fail_all = |code: i16, text: &str| {
        let mut response = CreateAclsResponse::default();
        response.results = request
            .creations
            .iter()
            .map(|_| {
                AclCreationResult::default()
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(text)))
            })
            .collect();
        encode(&response, version)
    };
    if !broker.security.authorizer_enabled() {
        return fail_all(ResponseError::SecurityDisabled.code(), SECURITY_DISABLED);
    }
    if !cluster_allowed(broker, session, AclOperation::Alter) {
        return fail_all(
            ResponseError::ClusterAuthorizationFailed.code(),
            "Cluster authorization failed.",
        );
    }
    let bindings: Vec<AclBinding> = request
        .creations
        .iter()
        .map(|c| AclBinding {
            resource_type: ResourceType::from_code(c.resource_type)
                .unwrap_or(ResourceType::Unknown),
            resource_name: c.resource_name.to_string(),
            pattern_type: if version == 0 {
                PatternType::Literal
            } else {
                PatternType::from_code(c.resource_pattern_type).unwrap_or(PatternType::Unknown)
            },
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: AclOperation::from_code(c.operation).unwrap_or(AclOperation::Unknown),
            permission: AclPermissionType::from_code(c.permission_type)
                .unwrap_or(AclPermissionType::Unknown),
        })
        .collect();
    let broker = Arc::clone(broker);
    let outcome = blocking(move || broker.security.create_acls(bindings)).await?;
    let results = match outcome {
        Some(Ok(results)) => results,
        Some(Err(error)) => {
            return fail_all(error.code(), &error.to_string());
        }
        None => return fail_all(ResponseError::SecurityDisabled.code(), SECURITY_DISABLED),
    };
    let mut response = CreateAclsResponse::default();
    response.results = results
        .into_iter()
        .map(|result| match result {
            Ok(()) => AclCreationResult::default(),
            Err(text) => AclCreationResult::default()
                .with_error_code(ResponseError::InvalidRequest.code())
                .with_error_message(Some(str_bytes(&text))),
        })
        .collect();
    encode(&response, version)
}

/// DescribeAcls (CLUSTER DESCRIBE): the matching ACLs grouped by resource pattern.
pub(crate) fn describe_acls(
    broker: &Arc<Broker>,
    session: &Session,
    request: &DescribeAclsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = DescribeAclsResponse::default();
    let fail = |mut response: DescribeAclsResponse, code: i16, text: &str| {
        response.error_code = code;
        response.error_message = Some(str_bytes(text));
        encode(&response, version)
    };
    if !broker.security.authorizer_enabled() {
        return fail(response, ResponseError::SecurityDisabled.code(), SECURITY_DISABLED);
    }
    if !cluster_allowed(broker, session, AclOperation::Describe) {
        return fail(
            response,
            ResponseError::ClusterAuthorizationFailed.code(),
            "Cluster authorization failed.",
        );
    }
    let filter = filter_of(
        request.resource_type_filter,
        request.resource_name_filter.as_deref(),
        if version == 0 { PatternType::Literal.code() } else { request.pattern_type_filter },
        request.principal_filter.as_deref(),
        request.host_filter.as_deref(),
        request.operation,
        request.permission_type,
    );
    if let Err(error) = crate::security::acl::validate_filter(&filter) {
        return fail(response, ResponseError::InvalidRequest.code(), &error.to_string());
    }
    let found = broker.security.describe_acls(&filter).unwrap_or_default();
    let mut grouped: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for binding in found {
        grouped
            .entry((
                binding.resource_type.code(),
                binding.resource_name.clone(),
                binding.pattern_type.code(),
            ))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(str_bytes(&binding.principal))
                    .with_host(str_bytes(&binding.host))
                    .with_operation(binding.operation.code())
                    .with_permission_type(binding.permission.code()),
            );
    }
    response.resources = grouped
        .into_iter()
        .map(|((resource_type, name, pattern_type), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(str_bytes(&name))
                .with_pattern_type(pattern_type)
                .with_acls(acls)
        })
        .collect();
    encode(&response, version)
}

/// DeleteAcls (CLUSTER ALTER): every filter is matched first, then the matches deleted.
pub(crate) async fn delete_acls(
    broker: &Arc<Broker>,
    session: &Session,
    request: DeleteAclsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let fail_all = |code: i16, text: &str| {
        let mut response = DeleteAclsResponse::default();
        response.filter_results = request
            .filters
            .iter()
            .map(|_| {
                DeleteAclsFilterResult::default()
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(text)))
            })
            .collect();
        encode(&response, version)
    };
    if !broker.security.authorizer_enabled() {
        return fail_all(ResponseError::SecurityDisabled.code(), SECURITY_DISABLED);
    }
    if !cluster_allowed(broker, session, AclOperation::Alter) {
        return fail_all(
            ResponseError::ClusterAuthorizationFailed.code(),
            "Cluster authorization failed.",
        );
    }
    let filters: Vec<AclBindingFilter> = request
        .filters
        .iter()
        .map(|f| {
            filter_of(
                f.resource_type_filter,
                f.resource_name_filter.as_deref(),
                if version == 0 { PatternType::Literal.code() } else { f.pattern_type_filter },
                f.principal_filter.as_deref(),
                f.host_filter.as_deref(),
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    let invalid: Vec<Option<String>> = filters
        .iter()
        .map(|filter| crate::security::acl::validate_filter(filter).err().map(|e| e.to_string()))
        .collect();
    let valid: Vec<AclBindingFilter> = filters
        .iter()
        .zip(&invalid)
        .filter(|(_, invalid)| invalid.is_none())
        .map(|(filter, _)| filter.clone())
        .collect();
    let broker = Arc::clone(broker);
    let outcome = blocking(move || broker.security.delete_acls(&valid)).await?;
    let mut matched = match outcome {
        Some(Ok(matched)) => matched.into_iter(),
        Some(Err(error)) => {
            return fail_all(error.code(), &error.to_string());
        }
        None => return fail_all(ResponseError::SecurityDisabled.code(), SECURITY_DISABLED),
    };
    let mut response = DeleteAclsResponse::default();
    for invalid in invalid {
        let result = match invalid {
            Some(text) => DeleteAclsFilterResult::default()
                .with_error_code(ResponseError::InvalidRequest.code())
                .with_error_message(Some(str_bytes(&text))),
            None => DeleteAclsFilterResult::default().with_matching_acls(
                matched
                    .next()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|b| {
                        DeleteAclsMatchingAcl::default()
                            .with_resource_type(b.resource_type.code())
                            .with_resource_name(str_bytes(&b.resource_name))
                            .with_pattern_type(b.pattern_type.code())
                            .with_principal(str_bytes(&b.principal))
                            .with_host(str_bytes(&b.host))
                            .with_operation(b.operation.code())
                            .with_permission_type(b.permission.code())
                    })
                    .collect(),
            ),
        };
        response.filter_results.push(result);
    }
    encode(&response, version)
}

/// DescribeUserScramCredentials (CLUSTER DESCRIBE): mechanisms and iterations, never keys.
pub(crate) fn describe_user_scram_credentials(
    broker: &Arc<Broker>,
    session: &Session,
    request: &DescribeUserScramCredentialsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = DescribeUserScramCredentialsResponse::default();
    if !cluster_allowed(broker, session, AclOperation::Describe) {
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        response.error_message = Some(str_bytes("Cluster authorization failed."));
        return encode(&response, version);
    }
    let known = broker.security.describe_scram();
    let info = |credentials: &[(ScramMechanism, u32)]| {
        credentials
            .iter()
            .map(|(mechanism, iterations)| {
                CredentialInfo::default()
                    .with_mechanism(mechanism.kafka_type())
                    .with_iterations(i32::try_from(*iterations).unwrap_or(i32::MAX))
            })
            .collect::<Vec<_>>()
    };
    match &request.users {
        None => {
            for (user, credentials) in &known {
                response.results.push(
                    DescribeUserScramCredentialsResult::default()
                        .with_user(str_bytes(user))
                        .with_credential_infos(info(credentials)),
                );
            }
        }
        Some(users) => {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for user in users {
                *counts.entry(user.name.as_str()).or_default() += 1;
            }
            let mut answered = BTreeSet::new();
            for user in users {
                let name = user.name.as_str();
                if !answered.insert(name) {
                    continue;
                }
                let mut result =
                    DescribeUserScramCredentialsResult::default().with_user(user.name.clone());
                if counts.get(name).copied().unwrap_or(0) > 1 {
                    result.error_code = ResponseError::DuplicateResource.code();
                    result.error_message = Some(str_bytes(
                        "Cannot describe SCRAM credentials for the same user twice in a single request",
                    ));
                } else if let Some(credentials) = known.get(name) {
                    result.credential_infos = info(credentials);
                } else {
                    result.error_code = ResponseError::ResourceNotFound.code();
                    result.error_message = Some(str_bytes(&format!(
                        "Attempt to describe a user credential that does not exist: {name}"
                    )));
                }
                response.results.push(result);
            }
        }
    }
    encode(&response, version)
}

/// AlterUserScramCredentials (CLUSTER ALTER): Kafka's `ScramControlManager` checks per user,
/// then the valid changes are stored durably at once.
pub(crate) async fn alter_user_scram_credentials(
    broker: &Arc<Broker>,
    session: &Session,
    request: AlterUserScramCredentialsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut users: Vec<String> = Vec::new();
    for name in
        request.deletions.iter().map(|d| &d.name).chain(request.upsertions.iter().map(|u| &u.name))
    {
        if !users.iter().any(|u| u == name.as_str()) {
            users.push(name.to_string());
        }
    }
    let mut response = AlterUserScramCredentialsResponse::default();
    if !cluster_allowed(broker, session, AclOperation::Alter) {
        for user in &users {
            response.results.push(
                AlterUserScramCredentialsResult::default()
                    .with_user(str_bytes(user))
                    .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                    .with_error_message(Some(str_bytes("Cluster authorization failed."))),
            );
        }
        return encode(&response, version);
    }
    let (errors, mut deletions, mut upsertions) = check_scram_alterations(broker, &request);
    deletions.retain(|(user, _)| !errors.contains_key(user));
    upsertions.retain(|(user, _, _)| !errors.contains_key(user));
    let store = Arc::clone(broker);
    let stored = blocking(move || store.security.alter_scram(&deletions, upsertions)).await?;
    for user in users {
        let mut result = AlterUserScramCredentialsResult::default().with_user(str_bytes(&user));
        if let Some((code, text)) = errors.get(&user) {
            result.error_code = *code;
            result.error_message = Some(str_bytes(text));
        } else if let Err(error) = &stored {
            result.error_code = error.code();
            result.error_message = Some(str_bytes(&error.to_string()));
        }
        response.results.push(result);
    }
    encode(&response, version)
}

fn entity_of<'a>(
    entity: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<ClientQuotaEntity, crate::security::quota::QuotaError> {
    ClientQuotaEntity::from_wire(entity)
}

/// DescribeClientQuotas (CLUSTER DESCRIBE_CONFIGS).
pub(crate) fn describe_client_quotas(
    broker: &Arc<Broker>,
    session: &Session,
    request: &DescribeClientQuotasRequest,
    version: i16,
) -> Result<Reply, Error> {
    use kafka_protocol::messages::describe_client_quotas_response::{
        EntityData, EntryData, ValueData,
    };
    let mut response = DescribeClientQuotasResponse::default();
    if !cluster_allowed(broker, session, AclOperation::DescribeConfigs) {
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        response.error_message = Some(str_bytes("Cluster authorization failed."));
        return encode(&response, version);
    }
    let components: Vec<FilterComponent> = request
        .components
        .iter()
        .map(|c| FilterComponent {
            entity_type: c.entity_type.to_string(),
            match_type: c.match_type,
            match_name: c._match.as_ref().map(ToString::to_string),
        })
        .collect();
    match broker.security.client_quotas().describe(&components, request.strict) {
        Err(error) => {
            response.error_code = error.error_code();
            response.error_message = Some(str_bytes(&error.to_string()));
        }
        Ok(found) => {
            response.entries = Some(
                found
                    .into_iter()
                    .map(|(entity, values)| {
                        EntryData::default()
                            .with_entity(
                                entity
                                    .to_wire()
                                    .into_iter()
                                    .map(|(entity_type, name)| {
                                        EntityData::default()
                                            .with_entity_type(str_bytes(entity_type))
                                            .with_entity_name(name.map(str_bytes))
                                    })
                                    .collect(),
                            )
                            .with_values(
                                values
                                    .into_iter()
                                    .map(|(key, value)| {
                                        ValueData::default()
                                            .with_key(str_bytes(&key))
                                            .with_value(value)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        }
    }
    encode(&response, version)
}

/// AlterClientQuotas (CLUSTER ALTER_CONFIGS): each entry is validated and applied to a copy;
/// the copy is stored durably unless `validate_only`.
pub(crate) async fn alter_client_quotas(
    broker: &Arc<Broker>,
    session: &Session,
    request: AlterClientQuotasRequest,
    version: i16,
) -> Result<Reply, Error> {
    use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
    let allowed = cluster_allowed(broker, session, AclOperation::AlterConfigs);
    let mut next = broker.security.client_quotas().clone();
    let mut results: Vec<(i16, Option<String>)> = Vec::new();
    for entry in &request.entries {
        if !allowed {
            results.push((
                ResponseError::ClusterAuthorizationFailed.code(),
                Some("Cluster authorization failed.".to_owned()),
            ));
            continue;
        }
        let entity = entity_of(
            entry.entity.iter().map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
        );
        let ops: Vec<(&str, Option<f64>)> = entry
            .ops
            .iter()
            .map(|op| (op.key.as_str(), (!op.remove).then_some(op.value)))
            .collect();
        let outcome = entity.and_then(|entity| next.alter_all(&entity, &ops));
        results.push(match outcome {
            Ok(()) => (NONE, None),
            Err(error) => (error.error_code(), Some(error.to_string())),
        });
    }
    let changed = allowed && results.iter().any(|(code, _)| *code == NONE);
    if changed && !request.validate_only {
        let store = Arc::clone(broker);
        if let Err(error) = blocking(move || store.security.set_client_quotas(next)).await? {
            let code = error.code();
            for result in &mut results {
                if result.0 == NONE {
                    *result = (code, Some(error.to_string()));
                }
            }
        }
    }
    let mut response = AlterClientQuotasResponse::default();
    for (entry, (code, text)) in request.entries.iter().zip(results) {
        response.entries.push(
            EntryData::default()
                .with_error_code(code)
                .with_error_message(text.as_deref().map(str_bytes))
                .with_entity(
                    entry
                        .entity
                        .iter()
                        .map(|e| {
                            EntityData::default()
                                .with_entity_type(e.entity_type.clone())
                                .with_entity_name(e.entity_name.clone())
                        })
                        .collect(),
                ),
        );
    }
    encode(&response, version)
}

/// A user's error in an AlterUserScramCredentials request: code and message.
type UserErrors = BTreeMap<String, (i16, String)>;
/// The deletions to make.
type ScramDeletions = Vec<(String, ScramMechanism)>;
/// The upsertions to make.
type ScramUpsertions = Vec<(String, ScramMechanism, ScramCredential)>;

/// Kafka's `ScramControlManager` checks: a duplicate (user, mechanism), an unknown mechanism,
/// an empty name, iterations out of range, a deletion of nothing. The first error of a user
/// fails all of that user's changes.
fn fail(errors: &mut UserErrors, user: &str, code: ResponseError, text: &str) {
    errors.entry(user.to_owned()).or_insert((code.code(), text.to_owned()));
}

/// The mechanism of a change, after the checks every change has (a known mechanism, a name).
fn checked_mechanism(errors: &mut UserErrors, user: &str, code: i8) -> Option<ScramMechanism> {
    let Some(mechanism) = ScramMechanism::from_kafka_type(code) else {
        fail(errors, user, ResponseError::UnsupportedSaslMechanism, "Unknown SCRAM mechanism");
        return None;
    };
    if user.is_empty() {
        fail(errors, user, ResponseError::UnacceptableCredential, "Username must not be empty");
        return None;
    }
    Some(mechanism)
}

fn check_scram_alterations(
    broker: &Broker,
    request: &AlterUserScramCredentialsRequest,
) -> (UserErrors, ScramDeletions, ScramUpsertions) {
    let known = broker.security.describe_scram();
    let mut errors: UserErrors = BTreeMap::new();
    let mut seen: BTreeSet<(String, i8)> = BTreeSet::new();
    for (user, mechanism) in request
        .deletions
        .iter()
        .map(|d| (d.name.as_str(), d.mechanism))
        .chain(request.upsertions.iter().map(|u| (u.name.as_str(), u.mechanism)))
    {
        if !seen.insert((user.to_owned(), mechanism)) {
            fail(
                &mut errors,
                user,
                ResponseError::DuplicateResource,
                "A user credential cannot be altered twice in the same request",
            );
        }
    }
    let mut deletions = Vec::new();
    for deletion in &request.deletions {
        let user = deletion.name.as_str();
        let Some(mechanism) = checked_mechanism(&mut errors, user, deletion.mechanism) else {
            continue;
        };
        if !known.get(user).is_some_and(|c| c.iter().any(|(m, _)| *m == mechanism)) {
            fail(
                &mut errors,
                user,
                ResponseError::ResourceNotFound,
                "Attempt to delete a user credential that does not exist",
            );
            continue;
        }
        deletions.push((user.to_owned(), mechanism));
    }
    let mut upsertions = Vec::new();
    for upsertion in &request.upsertions {
        let user = upsertion.name.as_str();
        let Some(mechanism) = checked_mechanism(&mut errors, user, upsertion.mechanism) else {
            continue;
        };
        let iterations = match mechanism.check_iterations(upsertion.iterations) {
            Ok(iterations) => iterations,
            Err(error) => {
                fail(&mut errors, user, ResponseError::UnacceptableCredential, &error.to_string());
                continue;
            }
        };
        if upsertion.salt.is_empty() || upsertion.salted_password.is_empty() {
            fail(
                &mut errors,
                user,
                ResponseError::UnacceptableCredential,
                "Salt and salted password must not be empty",
            );
            continue;
        }
        let credential = ScramCredential::from_salted_password(
            mechanism,
            &upsertion.salted_password,
            &upsertion.salt,
            iterations,
        );
        upsertions.push((user.to_owned(), mechanism, credential));
    }
    (errors, deletions, upsertions)
}
