//! Tenants and API tokens.

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Caller, TenantName};

async fn a_token_authenticates_its_tenant_until_revoked(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (acme, token) = tenant_with_token(&kitchen, "acme").await;
    let (globex, other) = tenant_with_token(&kitchen, "globex").await;

    assert_eq!(
        kitchen.authenticate(&token.secret).await.expect("auth"),
        Some(Caller {
            tenant: acme.clone(),
            token: token.id
        })
    );
    assert_eq!(
        kitchen.authenticate(&other.secret).await.expect("auth"),
        Some(Caller {
            tenant: globex,
            token: other.id
        })
    );
    assert_eq!(
        kitchen.authenticate("tkt_not-a-token").await.expect("auth"),
        None
    );
    assert!(token.secret.starts_with("tkt_") && token.secret.len() == 68);

    assert!(kitchen.revoke_token(token.id).await.expect("revoke"));
    assert_eq!(
        kitchen.authenticate(&token.secret).await.expect("auth"),
        None
    );
    assert!(
        !kitchen.revoke_token(token.id).await.expect("revoke twice"),
        "already revoked"
    );

    let second = kitchen.issue_token(acme.id).await.expect("issue");
    assert_ne!(second.secret, token.secret);
    assert_eq!(
        kitchen.authenticate(&second.secret).await.expect("auth"),
        Some(Caller {
            tenant: acme,
            token: second.id
        })
    );
}

async fn tenant_names_are_unique(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let name = TenantName::parse("acme").expect("slug");
    let acme = kitchen
        .create_tenant(name.clone())
        .await
        .expect("db")
        .expect("new name");
    let again = kitchen.create_tenant(name.clone()).await.expect("db");
    assert!(again.is_err(), "the name is taken");
    assert_eq!(kitchen.tenant_by_name(&name).await.expect("db"), Some(acme));
}

kitchen::on_both_databases!(
    a_token_authenticates_its_tenant_until_revoked,
    tenant_names_are_unique
);
