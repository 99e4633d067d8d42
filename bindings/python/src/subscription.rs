//! A subscription as `Client(subscriptions=[...])` passes it: a dict in Segment's export form
//! or in our settings, made JSON as every other dict is and read by the core
//! (`Subscription::from_json`). The core names a field on its own (`mapping.url`): here it
//! is named as the client's setting (`subscriptions[0].mapping.url`).

use crate::convert;
use crate::errors::to_py;
use outbound::subscription::Subscription;
use outbound::Error;
use pyo3::prelude::*;

/// Subscription `i` of `subscriptions=`.
pub(crate) fn subscription(i: usize, obj: &Bound<'_, PyAny>) -> PyResult<Subscription> {
    let value = convert::dict_item(obj, "subscriptions", i)?;
    Subscription::from_json(&value).map_err(|e| {
        to_py(match e {
            Error::Config { setting, reason } => Error::Config {
                setting: match setting.as_str() {
                    "subscription" => format!("subscriptions[{i}]"),
                    field => format!("subscriptions[{i}].{field}"),
                },
                reason,
            },
            e => e,
        })
    })
}
