//! The simulator over TLS, so that the provider client's TLS (rustls, and
//! its extra-CA setting) is tested against a real handshake, with
//! certificates made on the spot: [`TestCertificates`] is a throwaway CA
//! and a server certificate it signed for the loopback names.

use std::io;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// A server certificate chain and its key, in PEM.
#[derive(Debug, Clone)]
pub struct SimTls {
    /// The server's certificate, then any intermediates.
    pub cert_chain_pem: String,
    /// The server certificate's private key.
    pub key_pem: String,
}

impl SimTls {
    /// The acceptor that performs the server side of each handshake.
    pub(crate) fn acceptor(&self) -> io::Result<TlsAcceptor> {
        let invalid = |what: &str, e: &dyn std::fmt::Display| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
        };
        let chain = CertificateDer::pem_slice_iter(self.cert_chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid("the certificate chain is not PEM", &e))?;
        if chain.is_empty() {
            return Err(invalid("the certificate chain", &"holds no certificate"));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| invalid("the private key is not PEM", &e))?;
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| invalid("the certificate and key do not make a TLS server", &e))?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// A CA made for one test run and a server certificate it signed for
/// `localhost` and `127.0.0.1`. Only a client told to trust `ca_pem`
/// accepts the server.
#[derive(Debug, Clone)]
pub struct TestCertificates {
    /// The CA's certificate: what a client adds to its roots.
    pub ca_pem: String,
    /// What the simulator serves.
    pub server: SimTls,
}

impl TestCertificates {
    /// Makes a fresh CA and server certificate.
    pub fn generate() -> anyhow::Result<Self> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "provider-sim test CA");
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate()?;
        let mut server_params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "provider-sim");
        let server_cert = server_params.signed_by(&server_key, &issuer)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            server: SimTls {
                cert_chain_pem: server_cert.pem(),
                key_pem: server_key.serialize_pem(),
            },
        })
    }
}
