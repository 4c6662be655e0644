use super::*;

fn refused(message: Value) -> Refused {
    check_message(&message).expect_err("refused")
}

#[test]
fn one_request_or_notification_passes_with_its_id() {
    let ok = |m: Value| check_message(&m).expect("accepted");
    assert_eq!(
        ok(json!({"jsonrpc":"2.0","id":7,"method":"ping"})),
        json!(7)
    );
    assert_eq!(
        ok(json!({"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}})),
        json!("a")
    );
    assert_eq!(
        ok(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
        Value::Null
    );
    assert_eq!(ok(json!({"jsonrpc":"2.0","id":1,"result":{}})), json!(1));
    assert_eq!(
        ok(json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params":{"name":"get_ticket","arguments":{"ticket_id":"x"}}})),
        json!(1)
    );
}

#[test]
fn a_message_of_the_wrong_shape_is_an_invalid_request() {
    for message in [
        json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]),
        json!(null),
        json!(5),
        json!({"id":1,"method":"ping"}),
        json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":null,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":{"a":1},"method":"ping"}),
        json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":1,"method":5}),
        json!({"jsonrpc":"2.0","id":1}),
    ] {
        let (status, _, code, _) = refused(message.clone());
        assert_eq!(
            (status, code),
            (StatusCode::BAD_REQUEST, INVALID_REQUEST),
            "{message}"
        );
    }
}

#[test]
fn params_that_are_not_an_object_are_invalid_params_with_the_id() {
    for message in [
        json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}),
        json!({"jsonrpc":"2.0","id":3,"method":"initialize"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_ticket","arguments":"oops"}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_ticket","arguments":[1,2]}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tasks/update"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"create_ticket/k"}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"create_ticket/k","inputResponses":[1]}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"inputResponses":{}}}),
    ] {
        let (_, id, code, _) = refused(message.clone());
        assert_eq!((id, code), (json!(3), INVALID_PARAMS), "{message}");
    }
}

#[test]
fn a_host_refusal_names_the_setting_to_change() {
    let (status, code, message) = explain(
        StatusCode::FORBIDDEN,
        "Forbidden: Host header is not allowed",
        false,
    );
    assert_eq!((status, code), (StatusCode::FORBIDDEN, TRANSPORT_REFUSED));
    assert!(
        message.starts_with("Forbidden: Host header is not allowed"),
        "{message}"
    );
    assert!(message.contains("--mcp-allowed-hosts"), "{message}");
}
