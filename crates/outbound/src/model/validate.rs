//! The rules a message must meet before it is queued. Every failure names the field.

use crate::error::Error;
use crate::model::message::{Kind, Message};
use serde_json::Value;

fn present(v: &Option<String>) -> bool {
    v.as_deref().is_some_and(|s| !s.is_empty())
}

/// Checks `msg` against the rules of its call. `no_webhooks` says why the client cannot send
/// `delete` at all (the ingestion API has no such call), `None` when it can.
pub(crate) fn validate<O>(msg: &Message<O>, no_webhooks: Option<&str>) -> Result<(), Error> {
    let call = msg.kind.as_str();
    let missing = |field| Err(Error::MissingField { call, field });
    match msg.kind {
        Kind::Alias => {
            if !present(&msg.user_id) {
                return missing("user_id");
            }
            if !present(&msg.previous_id) {
                return missing("previous_id");
            }
        }
        Kind::Delete => {
            if !present(&msg.user_id) {
                return missing("user_id");
            }
            if let Some(why) = no_webhooks {
                return Err(Error::invalid(
                    "type",
                    format!("delete is sent to webhooks only, and {why}"),
                ));
            }
        }
        _ => {
            if !present(&msg.user_id) && !present(&msg.anonymous_id) {
                return missing("user_id or anonymous_id");
            }
        }
    }
    if msg.kind == Kind::Track && !present(&msg.event) {
        return missing("event");
    }
    if msg.kind == Kind::Group && !present(&msg.group_id) {
        return missing("group_id");
    }
    check_applies(msg)?;
    if let Some(ints) = &msg.integrations {
        for (name, v) in ints {
            if !matches!(v, Value::Bool(_) | Value::Object(_)) {
                return Err(Error::invalid(
                    format!("integrations.{name}"),
                    "must be true, false or an object of options",
                ));
            }
        }
    }
    if let Some(id) = &msg.message_id {
        if id.is_empty() {
            return Err(Error::invalid("message_id", "must not be empty"));
        }
    }
    Ok(())
}

/// Refuses fields that the call does not carry, so a typo'd call fails loudly instead of
/// sending less than the caller meant.
fn check_applies<O>(msg: &Message<O>) -> Result<(), Error> {
    use Kind::*;
    let k = msg.kind;
    let rules: [(&str, bool, bool); 7] = [
        ("event", msg.event.is_some(), k == Track),
        ("name", msg.name.is_some(), matches!(k, Page | Screen)),
        (
            "category",
            msg.category.is_some(),
            matches!(k, Page | Screen),
        ),
        ("group_id", msg.group_id.is_some(), k == Group),
        ("previous_id", msg.previous_id.is_some(), k == Alias),
        (
            "properties",
            msg.properties.is_some(),
            matches!(k, Track | Page | Screen),
        ),
        (
            "traits",
            msg.traits.is_some(),
            matches!(k, Identify | Group),
        ),
    ];
    for (field, given, allowed) in rules {
        if given && !allowed {
            return Err(Error::invalid(
                field,
                format!("does not apply to {}", k.as_str()),
            ));
        }
    }
    if k == Delete
        && (msg.anonymous_id.is_some() || msg.context.is_some() || msg.integrations.is_some())
    {
        return Err(Error::invalid(
            "delete",
            "carries only user_id, timestamp and message_id",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(msg: Message) -> String {
        validate(&msg, None).unwrap_err().to_string()
    }

    #[test]
    fn track_without_event_names_event() {
        assert_eq!(
            err(Message::new(Kind::Track).user_id("u")),
            "track requires event"
        );
    }

    #[test]
    fn no_user_id_and_no_anonymous_id_names_both() {
        assert_eq!(
            err(Message::new(Kind::Identify)),
            "identify requires user_id or anonymous_id"
        );
        assert_eq!(
            err(Message::new(Kind::Page).user_id("")),
            "page requires user_id or anonymous_id"
        );
    }

    #[test]
    fn anonymous_id_alone_is_accepted() {
        for kind in [Kind::Identify, Kind::Page, Kind::Screen] {
            validate(&Message::new(kind).anonymous_id("a1"), Some("no webhooks")).unwrap();
        }
        validate(
            &Message::new(Kind::Track).anonymous_id("a1").event("E"),
            Some("no webhooks"),
        )
        .unwrap();
        validate(
            &Message::new(Kind::Group).anonymous_id("a1").group_id("g"),
            Some("no webhooks"),
        )
        .unwrap();
    }

    #[test]
    fn group_without_group_id_names_group_id() {
        assert_eq!(
            err(Message::new(Kind::Group).user_id("u")),
            "group requires group_id"
        );
    }

    #[test]
    fn alias_without_user_id_or_previous_id_names_it() {
        assert_eq!(
            err(Message::new(Kind::Alias).previous_id("p")),
            "alias requires user_id"
        );
        assert_eq!(
            err(Message::new(Kind::Alias).user_id("u")),
            "alias requires previous_id"
        );
    }

    #[test]
    fn delete_without_user_id_names_user_id() {
        assert_eq!(err(Message::new(Kind::Delete)), "delete requires user_id");
    }

    #[test]
    fn delete_without_webhooks_is_refused() {
        let e = validate(&Message::delete("u"), Some("this client has no webhooks"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("webhooks"), "{e}");
    }

    #[test]
    fn fields_of_other_calls_are_refused_by_name() {
        assert_eq!(
            err(Message::identify("u").event("E")),
            "invalid event: does not apply to identify"
        );
        assert_eq!(
            err(Message::track("u", "E").trait_("a", 1)),
            "invalid traits: does not apply to track"
        );
    }

    #[test]
    fn integrations_values_must_be_bool_or_object() {
        let ints = serde_json::json!({"Webhooks": "no"})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            err(Message::identify("u").integrations(ints)),
            "invalid integrations.Webhooks: must be true, false or an object of options"
        );
    }
}
