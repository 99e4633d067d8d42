//! Tenants' names, both ways: a store keeps records under their tenant's name (which outlives
//! the process) and answers a tenant by its number in this process.

use crate::durable::TenantNo;
use foldhash::HashMap;
use std::sync::Arc;

#[derive(Default)]
pub(crate) struct TenantNames {
    names: HashMap<TenantNo, Arc<str>>,
    numbers: HashMap<Arc<str>, TenantNo>,
}

impl TenantNames {
    /// Tenant 0 named `""` (a client of its own), until told otherwise.
    pub(crate) fn with_default_tenant() -> TenantNames {
        let mut names = TenantNames::default();
        names.register(0, "");
        names
    }

    /// Tenant `no` is named `name` (a name it had before is forgotten).
    pub(crate) fn register(&mut self, no: TenantNo, name: &str) -> Arc<str> {
        let name: Arc<str> = Arc::from(name);
        if let Some(old) = self.names.insert(no, name.clone()) {
            self.numbers.remove(&old);
        }
        self.numbers.insert(name.clone(), no);
        name
    }

    /// Tenant `no` closed: its number and name part (the name stays another tenant's if it
    /// was registered again meanwhile).
    pub(crate) fn forget(&mut self, no: TenantNo) {
        if let Some(name) = self.names.remove(&no) {
            if self.numbers.get(&name) == Some(&no) {
                self.numbers.remove(&name);
            }
        }
    }

    /// Tenant `no`'s name, if registered.
    pub(crate) fn get(&self, no: TenantNo) -> Option<&Arc<str>> {
        self.names.get(&no)
    }

    /// The name records of tenant `no` are kept under (`""` for one never registered).
    pub(crate) fn name_of(&self, no: TenantNo) -> Arc<str> {
        self.get(no).cloned().unwrap_or_else(|| Arc::from(""))
    }

    /// The tenant named `name` in this process, if registered.
    pub(crate) fn number_of(&self, name: &str) -> Option<TenantNo> {
        self.numbers.get(name).copied()
    }
}
