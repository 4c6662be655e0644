//! How the pages name things for a person: a tenant by its name, a span
//! of time as "3 min".

use kitchen::{Tenant, TenantId};

/// The name of tenant `id` (its id, should it have none here).
pub(crate) fn tenant_name(tenants: &[Tenant], id: TenantId) -> String {
    tenants
        .iter()
        .find(|t| t.id == id)
        .map_or_else(|| id.to_string(), |t| t.name.to_string())
}

/// "3 min", "2 h", "4 d": how long ago, for a person.
pub(crate) fn age(elapsed: time::Duration) -> String {
    let seconds = elapsed.whole_seconds().max(0);
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", seconds / 60),
        3600..86_400 => format!("{} h", seconds / 3600),
        _ => format!("{} d", seconds / 86_400),
    }
}
