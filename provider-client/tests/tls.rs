//! The provider client over TLS, against the provider simulator served over
//! HTTPS with a CA and a server certificate made for this run: trusted
//! through the extra-CA setting it creates and finds tickets; without that
//! CA the handshake fails before a byte of the request leaves, which
//! proves nothing was made (`NotSent`), and the simulator received nothing.

use std::time::Duration;

use kitchen::{
    DispatchRequest, Dispatched, EffectKind, Lookup, ProviderWrite, SearchRequest, TicketProvider,
};
use provider_client::{HttpProvider, ProviderTls, SetupError};
use provider_sim::{self, SimConfig, TestCertificates};

fn request(external_ref: &str) -> DispatchRequest {
    DispatchRequest {
        external_ref: external_ref.into(),
        write: ProviderWrite::CreateTicket {
            project_id: "ops".into(),
            title: "Disk full on db-1".into(),
            description: None,
            priority: "high".into(),
        },
    }
}

fn search(external_ref: &str) -> SearchRequest {
    SearchRequest {
        kind: EffectKind::Ticket,
        external_ref: external_ref.into(),
        ticket: None,
    }
}

const TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn an_https_provider_behind_a_private_ca() {
    let certificates = TestCertificates::generate().expect("test certificates");
    let sim = provider_sim::spawn_tls(
        "127.0.0.1:0".parse().expect("loopback"),
        SimConfig::default(),
        &certificates.server,
        Some(&certificates.ca_pem),
    )
    .await
    .expect("the simulator serves HTTPS");
    let url = sim.base_url();
    assert!(url.starts_with("https://"), "{url}");

    // Only the system's roots: the private CA is unknown, so the handshake
    // fails, and that proves the request never left.
    let stranger = HttpProvider::new(&url, TIMEOUT).expect("a client");
    match stranger.dispatch(&request("ref-untrusted")).await {
        Dispatched::NotSent(why) => assert!(why.to_lowercase().contains("certificate"), "{why}"),
        other => panic!("expected not sent, got {other:?}"),
    }
    assert!(matches!(
        stranger.find_by_reference(&search("ref-untrusted")).await,
        Lookup::Failed(_)
    ));
    let counts = sim.client().counts().await.expect("counts over HTTPS");
    assert_eq!(counts.creates_received, 0, "nothing reached the provider");

    // Trusting the CA through the setting: a real exchange.
    let tls = ProviderTls {
        extra_roots_pem: Some(certificates.ca_pem.clone().into_bytes()),
    };
    let trusted = HttpProvider::with_tls(&url, TIMEOUT, &tls).expect("a client");
    let made = match trusted.dispatch(&request("ref-1")).await {
        Dispatched::Done { receipt, replayed } => {
            assert!(!replayed);
            receipt
        }
        other => panic!("expected created, got {other:?}"),
    };
    match trusted.find_by_reference(&search("ref-1")).await {
        Lookup::Found {
            receipt,
            duplicates,
        } => assert_eq!((receipt, duplicates.len()), (made, 0)),
        other => panic!("expected found, got {other:?}"),
    }
    let counts = sim.client().counts().await.expect("counts over HTTPS");
    assert_eq!(
        (counts.creates_received, counts.tickets_for("ref-1")),
        (1, 1)
    );
}

#[test]
fn an_extra_ca_bundle_without_a_certificate_is_refused_at_setup() {
    for pem in [
        &b""[..],
        b"not a certificate",
        b"-----BEGIN CERTIFICATE-----\nAAAA\n",
    ] {
        let tls = ProviderTls {
            extra_roots_pem: Some(pem.to_vec()),
        };
        match HttpProvider::with_tls("https://127.0.0.1:1", TIMEOUT, &tls) {
            Err(SetupError::ExtraRoots(_)) => {}
            other => panic!(
                "{:?}: expected a refused bundle, got {other:?}",
                String::from_utf8_lossy(pem)
            ),
        }
    }
}
