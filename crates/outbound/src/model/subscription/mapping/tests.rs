//! Each directive's behaviour, one per test, with the answers Segment's mapping-kit gives.

use super::*;
use serde_json::json;

fn event() -> Value {
    json!({
        "type": "track",
        "event": "Order Completed",
        "userId": "u1",
        "properties": {
            "total": 25.5, "name": "Größe", "email": null, "tags": ["a", "b"],
            "items": [{"sku": "x1", "price": 2}, {"sku": "x2", "price": 3}],
            "nested": {"a": {"b": 1}, "c": null, "d": [1, {"e": 2}]},
            "json": "{\"k\":[1,2]}", "empty": "", "zero": 0
        },
        "context": {"app": {"name": "Shop"}}
    })
}

fn map(mapping: Value) -> Option<Value> {
    let m = Mapping::new(&mapping).unwrap();
    let e = event();
    m.apply(&e).unwrap().map(Cow::into_owned)
}

fn fails(mapping: Value) -> String {
    let m = Mapping::new(&mapping).unwrap();
    m.apply(&event()).unwrap_err().to_string()
}

fn refused(mapping: Value) -> MappingError {
    Mapping::new(&mapping).unwrap_err()
}

#[test]
fn plain_values_map_to_themselves() {
    assert_eq!(
        map(json!({"a": [1, "x"], "b": null})),
        Some(json!({"a": [1, "x"], "b": null}))
    );
}

#[test]
fn path_reads_a_value_of_the_event() {
    assert_eq!(
        map(json!({"@path": "$.properties.total"})),
        Some(json!(25.5))
    );
    assert_eq!(
        map(json!({"@path": "$.context.app.name"})),
        Some(json!("Shop"))
    );
}

#[test]
fn path_dollar_dot_is_the_whole_event() {
    assert_eq!(map(json!({"@path": "$."})), Some(event()));
}

#[test]
fn path_reads_array_items_and_lengths() {
    assert_eq!(
        map(json!({"@path": "$.properties.items[1].sku"})),
        Some(json!("x2"))
    );
    assert_eq!(
        map(json!({"@path": "$.properties.tags.length"})),
        Some(json!(2))
    );
}

#[test]
fn path_to_nothing_leaves_the_key_out() {
    assert_eq!(
        map(json!({"a": {"@path": "$.properties.missing"}, "b": 1})),
        Some(json!({"b": 1}))
    );
}

#[test]
fn path_through_a_falsy_value_gives_that_value() {
    assert_eq!(map(json!({"@path": "$.properties.zero.x"})), Some(json!(0)));
}

#[test]
fn path_may_be_given_by_a_directive() {
    assert_eq!(
        map(json!({"@path": {"@template": "$.properties.{{type}}"}})),
        None
    );
    assert_eq!(
        map(json!({"@path": {"@template": "$.{{properties.tags.0}}"}})),
        None
    );
    assert_eq!(
        map(json!({"@path": {"@literal": "$.userId"}})),
        Some(json!("u1"))
    );
}

#[test]
fn path_of_a_non_string_fails_the_event() {
    assert!(fails(json!({"@path": {"@path": "$.properties.total"}}))
        .contains("@path: expected string, got number"));
}

#[test]
fn template_fills_placeholders_with_strings() {
    assert_eq!(
        map(json!({"@template": "{{userId}} paid {{ properties.total }} for {{properties.tags}}"})),
        Some(json!("u1 paid 25.5 for a,b"))
    );
}

#[test]
fn template_writes_nothing_for_null_and_missing_values() {
    assert_eq!(
        map(json!({"@template": "[{{properties.email}}|{{nope}}]"})),
        Some(json!("[|]"))
    );
}

#[test]
fn template_writes_objects_as_javascript_does() {
    assert_eq!(
        map(json!({"@template": "{{context.app}}"})),
        Some(json!("[object Object]"))
    );
}

#[test]
fn template_runs_triple_braces_first_then_double_braces_over_the_result() {
    let m = Mapping::new(&json!({"@template": "{{{properties.t}}}"})).unwrap();
    let e = json!({"properties": {"t": "{{userId}}"}, "userId": "u9"});
    assert_eq!(m.apply(&e).unwrap().unwrap().into_owned(), json!("u9"));
}

#[test]
fn if_exists_chooses_then_or_else() {
    let m = |path: &str| json!({"@if": {"exists": {"@path": path}, "then": "yes", "else": "no"}});
    assert_eq!(map(m("$.userId")), Some(json!("yes")));
    assert_eq!(map(m("$.properties.email")), Some(json!("no")));
    assert_eq!(map(m("$.nothing")), Some(json!("no")));
}

#[test]
fn if_blank_treats_empty_text_zero_and_false_as_blank() {
    let m =
        |path: &str| json!({"@if": {"blank": {"@path": path}, "then": "full", "else": "blank"}});
    assert_eq!(map(m("$.properties.empty")), Some(json!("blank")));
    assert_eq!(map(m("$.properties.zero")), Some(json!("blank")));
    assert_eq!(map(m("$.userId")), Some(json!("full")));
}

#[test]
fn if_without_a_branch_gives_nothing() {
    assert_eq!(
        map(json!({"a": {"@if": {"exists": {"@path": "$.nothing"}, "then": 1}}})),
        Some(json!({}))
    );
}

#[test]
fn if_with_a_falsy_else_gives_nothing() {
    assert_eq!(
        map(json!({"a": {"@if": {"exists": {"@path": "$.x"}, "then": 1, "else": 0}}})),
        Some(json!({}))
    );
}

#[test]
fn if_needs_exists_or_blank() {
    assert!(fails(json!({"@if": {"then": 1}})).contains("requires an \"exists\" key"));
}

#[test]
fn literal_resolves_what_it_holds() {
    assert_eq!(
        map(json!({"@literal": {"a": {"@path": "$.userId"}}})),
        Some(json!({"a": "u1"}))
    );
    assert_eq!(map(json!({"@literal": true})), Some(json!(true)));
}

#[test]
fn array_path_maps_each_item() {
    assert_eq!(
        map(json!({"@arrayPath": ["$.properties.items", {"id": {"@path": "$.sku"}, "n": 1}]})),
        Some(json!([{"id": "x1", "n": 1}, {"id": "x2", "n": 1}]))
    );
}

#[test]
fn array_path_maps_an_object_as_one_item() {
    assert_eq!(
        map(json!({"@arrayPath": ["$.context.app", {"n": {"@path": "$.name"}}]})),
        Some(json!([{"n": "Shop"}]))
    );
}

#[test]
fn array_path_without_a_shape_is_the_value() {
    assert_eq!(
        map(json!({"@arrayPath": ["$.properties.tags"]})),
        Some(json!(["a", "b"]))
    );
}

#[test]
fn case_lowers_and_uppers_text() {
    assert_eq!(
        map(json!({"@case": {"operator": "lower", "value": {"@path": "$.event"}}})),
        Some(json!("order completed"))
    );
    assert_eq!(
        map(json!({"@case": {"operator": "upper", "value": {"@path": "$.properties.name"}}})),
        Some(json!("GRÖSSE"))
    );
}

#[test]
fn case_leaves_non_text_alone() {
    assert_eq!(
        map(json!({"@case": {"operator": "upper", "value": {"@path": "$.properties.total"}}})),
        Some(json!(25.5))
    );
}

#[test]
fn case_with_another_operator_fails_on_text() {
    assert!(fails(json!({"@case": {"operator": "title", "value": "x"}}))
        .contains("\"lower\" or \"upper\""));
}

#[test]
fn replace_replaces_every_occurrence_by_default() {
    assert_eq!(
        map(
            json!({"@replace": {"pattern": "e", "replacement": "3", "value": {"@path": "$.event"}}})
        ),
        Some(json!("Ord3r Compl3t3d"))
    );
}

#[test]
fn replace_once_and_ignoring_case() {
    assert_eq!(
        map(
            json!({"@replace": {"pattern": "O", "replacement": "0", "global": false, "ignorecase": true, "value": "foo"}})
        ),
        Some(json!("f0o"))
    );
}

#[test]
fn replace_takes_its_pattern_literally() {
    assert_eq!(
        map(json!({"@replace": {"pattern": ".", "replacement": "!", "value": "a.b"}})),
        Some(json!("a!b"))
    );
}

#[test]
fn replace_makes_numbers_text() {
    assert_eq!(
        map(
            json!({"@replace": {"pattern": ".", "replacement": ",", "value": {"@path": "$.properties.total"}}})
        ),
        Some(json!("25,5"))
    );
}

#[test]
fn replace_of_other_values_is_empty_text() {
    assert_eq!(
        map(json!({"@replace": {"pattern": "a", "value": {"@path": "$.context"}}})),
        Some(json!(""))
    );
}

#[test]
fn replace_applies_a_second_pattern() {
    assert_eq!(
        map(
            json!({"@replace": {"pattern": "a", "replacement": "b", "pattern2": "b", "replacement2": "c", "value": "ab"}})
        ),
        Some(json!("cc"))
    );
}

#[test]
fn merge_joins_objects_the_later_winning() {
    assert_eq!(
        map(json!({"@merge": {"direction": "right", "objects": [{"a": 1, "b": 1}, {"b": 2}]}})),
        Some(json!({"a": 1, "b": 2}))
    );
}

#[test]
fn merge_left_lets_the_first_win() {
    assert_eq!(
        map(
            json!({"@merge": {"direction": "left", "objects": [{"a": 1, "b": 1}, {"b": 2, "c": {"@path": "$.userId"}}]}})
        ),
        Some(json!({"b": 1, "c": "u1", "a": 1}))
    );
}

#[test]
fn merge_needs_a_direction() {
    assert!(fails(json!({"@merge": {"objects": [{}]}})).contains("\"direction\""));
}

#[test]
fn json_encode_writes_javascripts_text() {
    assert_eq!(
        map(json!({"@json": {"mode": "encode", "value": {"@path": "$.properties.nested"}}})),
        Some(json!(r#"{"a":{"b":1},"c":null,"d":[1,{"e":2}]}"#))
    );
}

#[test]
fn json_decode_parses_text_and_keeps_what_does_not_parse() {
    assert_eq!(
        map(json!({"@json": {"mode": "decode", "value": {"@path": "$.properties.json"}}})),
        Some(json!({"k": [1, 2]}))
    );
    assert_eq!(
        map(json!({"@json": {"mode": "decode", "value": "{nope"}})),
        Some(json!("{nope"))
    );
}

#[test]
fn flatten_joins_keys_with_the_separator() {
    assert_eq!(
        map(json!({"@flatten": {"separator": "_", "value": {"@path": "$.properties.nested"}}})),
        Some(json!({"a_b": 1, "c": null, "d_0": 1, "d_1_e": 2}))
    );
}

#[test]
fn flatten_may_keep_arrays_whole() {
    assert_eq!(
        map(
            json!({"@flatten": {"separator": ".", "omitArrays": true, "value": {"@path": "$.properties.nested"}}})
        ),
        Some(json!({"a.b": 1, "c": null, "d": [1, {"e": 2}]}))
    );
}

#[test]
fn exclude_when_null_drops_null_values() {
    assert_eq!(
        map(json!({"@excludeWhenNull": {"@path": "$.properties.nested"}})),
        Some(json!({"a": {"b": 1}, "d": [1, {"e": 2}]}))
    );
    assert_eq!(
        map(json!({"x": {"@excludeWhenNull": {"@path": "$.properties.email"}}})),
        Some(json!({}))
    );
}

#[test]
fn transform_maps_against_a_new_payload() {
    assert_eq!(
        map(
            json!({"@transform": {"apply": {"who": {"@path": "$.userId"}}, "mapping": {"id": {"@path": "$.who"}}}})
        ),
        Some(json!({"id": "u1"}))
    );
}

#[test]
fn directives_inside_arrays_run_unvalidated() {
    assert_eq!(
        map(json!([{"@path": "$.userId"}, {"@path": "$.x", "y": 1}])),
        Some(json!(["u1", {"@path": "$.x", "y": 1}]))
    );
    assert!(fails(json!([{"@nope": 1}])).contains("@nope is not a valid directive"));
}

#[test]
fn liquid_is_refused_by_name() {
    let e = refused(json!({"a": {"@liquid": "{{ userId }}"}}));
    assert_eq!(
        (e.path.as_str(), e.reason.as_str()),
        ("a.@liquid", "@liquid is not supported")
    );
    assert_eq!(refused(json!([{"@liquid": "x"}])).path, "0.@liquid");
}

#[test]
fn invalid_shapes_are_refused_with_their_path() {
    let e = refused(json!({"a": {"b": {"@case": {"operator": 1}}}}));
    assert_eq!(e.path, "a.b.@case.operator");
}

#[test]
fn runtime_failures_name_the_directive() {
    let m = Mapping::at(
        &json!({"x": {"@case": {"operator": "nope", "value": "a"}}}),
        "data",
    )
    .unwrap();
    let err = m.apply(&event()).unwrap_err();
    assert_eq!(err.path, "data.x.@case");
}
