//! `rediss://`: the store talks to a redis-server over TLS (feature `tls`).
#![cfg(feature = "tls")]

use redis_entity::{RedisEntity, Store};
use std::path::Path;
use std::process::Command;
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    name: String,
}

/// A self-signed certificate for 127.0.0.1 in `dir` (cert.pem, key.pem).
fn certificate(dir: &Path) {
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is needed to make the test certificate");
    assert!(status.success());
}

#[tokio::test]
async fn a_store_works_over_tls() {
    let dir = std::env::temp_dir().join(format!("redis-entity-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    certificate(&dir);
    let tls_port = support::free_port().to_string();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let _server = RedisServer::start_with(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-key-file",
        key.to_str().unwrap(),
        "--tls-ca-cert-file",
        cert.to_str().unwrap(),
        "--tls-auth-clients",
        "no",
    ]);
    // The certificate is self-signed: `#insecure` skips its verification.
    let store = Store::connect(&format!("rediss://127.0.0.1:{tls_port}/#insecure"))
        .await
        .unwrap();
    let u = User {
        id: 1,
        name: "lisi".into(),
    };
    store.save(&u).await.unwrap();
    assert_eq!(
        store.find_unique(User::NAME, "lisi").await.unwrap(),
        Some(u)
    );
    // Without TLS the TLS port refuses to talk.
    assert!(Store::connect(&format!("redis://127.0.0.1:{tls_port}/"))
        .await
        .is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
