//! Tenants, API tokens and their scopes, and identity-provider subjects.

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Caller, Credential, Issuer, OAuthIdentity, Scope, Scopes, Subject, TenantName, TenantVia,
};

async fn a_token_authenticates_its_tenant_until_revoked(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (acme, token) = tenant_with_token(&kitchen, "acme").await;
    let (globex, other) = tenant_with_token(&kitchen, "globex").await;

    assert_eq!(
        kitchen.authenticate(&token.secret).await.expect("auth"),
        Some(Caller {
            tenant: acme.clone(),
            credential: Credential::ApiToken(token.id),
            scopes: Scopes::ALL,
        })
    );
    assert_eq!(
        kitchen.authenticate(&other.secret).await.expect("auth"),
        Some(Caller {
            tenant: globex,
            credential: Credential::ApiToken(other.id),
            scopes: Scopes::ALL,
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
            credential: Credential::ApiToken(second.id),
            scopes: Scopes::ALL,
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

async fn a_token_issued_with_fewer_scopes_carries_only_those(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (acme, _) = tenant_with_token(&kitchen, "acme").await;
    let read_only = kitchen
        .issue_token_with(acme.id, Scopes::only(Scope::Read))
        .await
        .expect("issue");
    assert_eq!(read_only.scopes, Scopes::only(Scope::Read));
    let caller = kitchen
        .authenticate(&read_only.secret)
        .await
        .expect("auth")
        .expect("a live token");
    assert_eq!(caller.scopes, Scopes::only(Scope::Read));
    assert_eq!(caller.token(), Some(read_only.id));
}

fn identity(subject: &str, claim: Option<&str>) -> OAuthIdentity {
    OAuthIdentity {
        issuer: Issuer::parse("https://idp.example").expect("an issuer"),
        subject: Subject::parse(subject).expect("a subject"),
        tenant_claim: claim.map(str::to_owned),
    }
}

async fn an_identity_finds_its_tenant_by_mapping_or_claim_and_never_makes_one(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (acme, _) = tenant_with_token(&kitchen, "acme").await;
    let (globex, _) = tenant_with_token(&kitchen, "globex").await;
    let read = Scopes::only(Scope::Read);
    let resolve = |who: OAuthIdentity| {
        let kitchen = kitchen.clone();
        async move { kitchen.oauth_caller(&who, read).await.expect("db") }
    };

    // The claim's value is a tenant's name.
    let by_claim = resolve(identity("user-1", Some("globex")))
        .await
        .expect("globex");
    assert_eq!(by_claim.tenant, globex);
    assert_eq!(by_claim.scopes, read);
    assert_eq!(by_claim.token(), None, "no API token");
    assert!(matches!(
        by_claim.credential,
        Credential::OAuth {
            via: TenantVia::Claim,
            ..
        }
    ));

    // Unknown names, names that cannot be tenants, and no claim at all:
    // refused, and no tenant is made for them.
    for claim in [Some("initech"), Some("Not A Slug"), None] {
        assert_eq!(resolve(identity("user-1", claim)).await, None, "{claim:?}");
    }
    let initech = TenantName::parse("initech").expect("slug");
    assert_eq!(kitchen.tenant_by_name(&initech).await.expect("db"), None);

    // An operator's mapping of the subject wins over the claim.
    let issuer = Issuer::parse("https://idp.example").expect("an issuer");
    let ci = Subject::parse("ci-bot").expect("a subject");
    assert!(
        kitchen
            .map_oauth_subject(&issuer, &ci, acme.id)
            .await
            .expect("map")
    );
    let mapped = resolve(identity("ci-bot", Some("globex")))
        .await
        .expect("mapped");
    assert_eq!(mapped.tenant, acme);
    assert!(matches!(
        mapped.credential,
        Credential::OAuth {
            via: TenantVia::SubjectMapping,
            ..
        }
    ));
    // Mapped again: moved, not duplicated.
    assert!(
        !kitchen
            .map_oauth_subject(&issuer, &ci, globex.id)
            .await
            .expect("remap")
    );
    assert_eq!(
        resolve(identity("ci-bot", None)).await.map(|c| c.tenant),
        Some(globex.clone())
    );
    // The same subject at another issuer is someone else.
    let elsewhere = OAuthIdentity {
        issuer: Issuer::parse("https://other.example").expect("an issuer"),
        ..identity("ci-bot", None)
    };
    assert_eq!(
        kitchen.oauth_caller(&elsewhere, read).await.expect("db"),
        None
    );

    assert!(
        kitchen
            .unmap_oauth_subject(&issuer, &ci)
            .await
            .expect("unmap")
    );
    assert!(
        !kitchen
            .unmap_oauth_subject(&issuer, &ci)
            .await
            .expect("again")
    );
    assert_eq!(resolve(identity("ci-bot", None)).await, None, "unmapped");
}

/// What an operator lists: every tenant by name; a tenant's tokens, live
/// and revoked, with their scopes and never a secret, and none of another
/// tenant's.
async fn an_operator_lists_tenants_and_a_tenants_tokens(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    assert!(kitchen.tenants().await.expect("tenants").is_empty());
    let (globex, other) = tenant_with_token(&kitchen, "globex").await;
    let (acme, first) = tenant_with_token(&kitchen, "acme").await;
    let names: Vec<String> = kitchen
        .tenants()
        .await
        .expect("tenants")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["acme", "globex"], "by name");

    let read = kitchen
        .issue_token_with(acme.id, Scopes::only(Scope::Read))
        .await
        .expect("issue");
    assert!(kitchen.revoke_token(first.id).await.expect("revoke"));
    let tokens = kitchen.tokens_of(acme.id).await.expect("tokens");
    let seen: Vec<_> = tokens
        .iter()
        .map(|t| (t.id, t.scopes, t.revoked_at.is_some()))
        .collect();
    assert_eq!(
        seen,
        [
            (first.id, Scopes::ALL, true),
            (read.id, Scopes::only(Scope::Read), false)
        ],
        "oldest first, the revoked one said so"
    );
    assert!(
        tokens
            .iter()
            .all(|t| t.revoked_at.is_none_or(|r| r >= t.created_at))
    );
    let theirs: Vec<_> = kitchen
        .tokens_of(globex.id)
        .await
        .expect("tokens")
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(theirs, [other.id], "only the tenant's own");
}

kitchen::on_both_databases!(
    an_operator_lists_tenants_and_a_tenants_tokens,
    a_token_authenticates_its_tenant_until_revoked,
    tenant_names_are_unique,
    a_token_issued_with_fewer_scopes_carries_only_those,
    an_identity_finds_its_tenant_by_mapping_or_claim_and_never_makes_one
);
