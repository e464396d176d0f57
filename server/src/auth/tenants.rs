//! What each tenant may do beyond its roles (issue 48): who answers its approvals. Configured
//! in the `[tenants]` tables of the config file (docs/configuration.md), with defaults.

use std::collections::HashMap;

use serde::Deserialize;

/// Who may answer a tenant's approvals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalAnswerers {
    /// Operators of the tenant and admins (the default).
    #[default]
    Operator,
    /// Those, and the client that opened the session.
    OwnerOrOperator,
}

/// One tenant's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantPolicy {
    /// Who answers its approvals.
    pub approvals: ApprovalAnswerers,
    /// Its limits on this node.
    pub limits: super::limits::TenantLimits,
}

/// Every tenant's settings: the named ones, and the default for the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tenants {
    /// For tenants not named.
    pub default: TenantPolicy,
    /// By tenant name.
    pub named: HashMap<String, TenantPolicy>,
}

impl Tenants {
    /// The settings of `tenant`.
    pub fn policy(&self, tenant: &str) -> &TenantPolicy {
        self.named.get(tenant).unwrap_or(&self.default)
    }
}
