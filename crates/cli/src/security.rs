//! `seglog acls` and `seglog users`: the ACLs and SCRAM users of a stopped broker's log
//! directory, in the spirit of `kafka-acls.sh` and `kafka-configs.sh --entity-type users`
//! (which do the same against a running cluster; seglog's broker also serves CreateAcls and
//! AlterUserScramCredentials, so those tools work against it too).

use std::io::{BufRead, Write};

use anyhow::{Context, Result};
use seglog_broker::security_admin::{self, AclSpec};

use crate::common::{LogDirArgs, open_manager};

/// Arguments of `seglog acls`.
#[derive(Debug, clap::Args)]
pub(crate) struct AclsArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    #[command(subcommand)]
    action: AclsAction,
}

/// Which resource an ACL names (one of them).
#[derive(Debug, Clone, clap::Args)]
struct Resource {
    /// A topic (or, with --pattern prefixed, a topic name prefix; `*` for every topic).
    #[arg(long, group = "resource")]
    topic: Option<String>,
    /// A consumer group.
    #[arg(long, group = "resource")]
    group: Option<String>,
    /// A transactional id.
    #[arg(long, group = "resource")]
    transactional_id: Option<String>,
    /// The cluster (`kafka-cluster`).
    #[arg(long, group = "resource")]
    cluster: bool,
    /// literal or prefixed.
    #[arg(long, default_value = "literal")]
    pattern: String,
}

impl Resource {
    fn kind_and_name(&self) -> (&'static str, String) {
        if let Some(topic) = &self.topic {
            ("Topic", topic.clone())
        } else if let Some(group) = &self.group {
            ("Group", group.clone())
        } else if let Some(id) = &self.transactional_id {
            ("TransactionalId", id.clone())
        } else if self.cluster {
            ("Cluster", "kafka-cluster".to_owned())
        } else {
            ("", String::new())
        }
    }
}

#[derive(Debug, clap::Subcommand)]
enum AclsAction {
    /// Lists every ACL, as Kafka prints an AclBinding.
    List,
    /// Adds an ACL: a principal may (or, with --deny, may not) perform operations on a resource.
    ///
    /// Example: seglog acls add --principal User:alice --operation Read --topic orders
    Add {
        /// The principal, `User:<name>` (`User:*` for everyone).
        #[arg(long)]
        principal: String,
        /// Operations: Read, Write, Create, Delete, Alter, Describe, ClusterAction,
        /// DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable).
        #[arg(long = "operation", required = true)]
        operations: Vec<String>,
        /// The client host (an IP address), or `*`.
        #[arg(long, default_value = "*")]
        host: String,
        /// A DENY ACL instead of an ALLOW one.
        #[arg(long)]
        deny: bool,
        #[command(flatten)]
        resource: Resource,
    },
    /// Removes the ACLs that match: every given field must match, an absent one matches all.
    ///
    /// Example: seglog acls remove --principal User:alice --topic orders
    Remove {
        /// The principal.
        #[arg(long)]
        principal: Option<String>,
        /// The operation.
        #[arg(long)]
        operation: Option<String>,
        /// The host.
        #[arg(long)]
        host: Option<String>,
        #[command(flatten)]
        resource: Resource,
    },
}

pub(crate) fn run_acls(args: &AclsArgs) -> Result<()> {
    let (manager, _) = open_manager(&args.log_dir.log_dir)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        AclsAction::List => {
            for line in security_admin::list_acls(&manager)? {
                writeln!(out, "{line}")?;
            }
        }
        AclsAction::Add { principal, operations, host, deny, resource } => {
            let (kind, name) = resource.kind_and_name();
            anyhow::ensure!(
                !kind.is_empty(),
                "name a resource: --topic, --group, --transactional-id or --cluster"
            );
            let specs: Vec<AclSpec> = operations
                .iter()
                .map(|operation| AclSpec {
                    resource_type: kind.to_owned(),
                    resource_name: name.clone(),
                    pattern_type: resource.pattern.clone(),
                    principal: principal.clone(),
                    host: host.clone(),
                    operation: operation.clone(),
                    permission: if *deny { "Deny" } else { "Allow" }.to_owned(),
                })
                .collect();
            let added =
                security_admin::add_acls(&manager, &specs).context("cannot add the ACLs")?;
            writeln!(out, "added {added} ACL(s)")?;
        }
        AclsAction::Remove { principal, operation, host, resource } => {
            let (kind, name) = resource.kind_and_name();
            let spec = AclSpec {
                resource_type: kind.to_owned(),
                resource_name: name,
                pattern_type: if kind.is_empty() {
                    String::new()
                } else {
                    resource.pattern.clone()
                },
                principal: principal.clone().unwrap_or_default(),
                host: host.clone().unwrap_or_default(),
                operation: operation.clone().unwrap_or_default(),
                permission: String::new(),
            };
            for line in
                security_admin::remove_acls(&manager, &spec).context("cannot remove ACLs")?
            {
                writeln!(out, "removed {line}")?;
            }
        }
    }
    manager.shutdown()?;
    Ok(())
}

/// Arguments of `seglog users`.
#[derive(Debug, clap::Args)]
pub(crate) struct UsersArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    #[command(subcommand)]
    action: UsersAction,
}

#[derive(Debug, clap::Subcommand)]
enum UsersAction {
    /// Lists the SCRAM users: name, mechanism, iterations (never a key).
    List,
    /// Adds a SCRAM user (or sets a new password); the password is read from stdin unless
    /// --password is given.
    ///
    /// Example: seglog users add --user alice --password alice-secret
    Add {
        /// The user name (the principal is `User:<name>`).
        #[arg(long)]
        user: String,
        /// The password (visible to other local users in the process list; prefer stdin).
        #[arg(long)]
        password: Option<String>,
        /// SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default both).
        #[arg(long = "mechanism")]
        mechanisms: Vec<String>,
        /// PBKDF2 iterations (4096 to 16384).
        #[arg(long, default_value_t = 4096)]
        iterations: u32,
    },
    /// Removes a user's SCRAM credentials (one mechanism, or all).
    Remove {
        /// The user name.
        #[arg(long)]
        user: String,
        /// Only this mechanism.
        #[arg(long)]
        mechanism: Option<String>,
    },
}

pub(crate) fn run_users(args: &UsersArgs) -> Result<()> {
    let (manager, _) = open_manager(&args.log_dir.log_dir)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        UsersAction::List => {
            writeln!(out, "USER\tMECHANISM\tITERATIONS")?;
            for (user, mechanism, iterations) in security_admin::list_scram_users(&manager)? {
                writeln!(out, "{user}\t{mechanism}\t{iterations}")?;
            }
        }
        UsersAction::Add { user, password, mechanisms, iterations } => {
            let password = if let Some(password) = password {
                password.clone()
            } else {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .read_line(&mut line)
                    .context("cannot read the password from stdin")?;
                line.trim_end_matches(['\r', '\n']).to_owned()
            };
            anyhow::ensure!(!password.is_empty(), "the password must not be empty");
            let mechanisms = if mechanisms.is_empty() {
                vec!["SCRAM-SHA-256".to_owned(), "SCRAM-SHA-512".to_owned()]
            } else {
                mechanisms.clone()
            };
            for mechanism in &mechanisms {
                security_admin::add_scram_user(&manager, user, mechanism, &password, *iterations)
                    .with_context(|| format!("cannot add {user} ({mechanism})"))?;
                writeln!(out, "added {user} ({mechanism}, {iterations} iterations)")?;
            }
        }
        UsersAction::Remove { user, mechanism } => {
            let removed = security_admin::remove_scram_user(&manager, user, mechanism.as_deref())?;
            writeln!(out, "removed {removed} credential(s) of {user}")?;
        }
    }
    manager.shutdown()?;
    Ok(())
}
