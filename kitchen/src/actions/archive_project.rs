//! `archive_project`: the guide's example of a write whose effect is not a
//! ticket (`docs/adding-an-action.md`, "An effect that is not a ticket").
//! It exists only in the kitchen's own tests, so that the guide's example
//! is compiled and run on both databases and cannot drift from the code:
//! no door offers it and no migration makes its table (the test does).
//! The guide quotes this file between the `guide:` markers.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::operation::OperationRecord;
use crate::domain::tenant::TenantId;
use crate::domain::ticket::ProjectId;
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::write::{WriteTx, on_tx};
use crate::store::{Db, on_db};
use crate::write::{Applied, Reach, RetrySafeWrite, WriteAction, WriteContext, WriteResult};

// guide: begin
/// The request as a caller sends it: every field optional, so that each
/// problem is reported by name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveDraft {
    /// The project to archive.
    pub project_id: Option<String>,
    /// Why, kept with the archive.
    pub reason: Option<String>,
}

/// The validated command.
#[derive(Debug, Clone)]
pub struct ArchiveCommand {
    project_id: ProjectId,
    reason: String,
}

/// What the fingerprint hashes: plain values, fields in alphabetical order.
#[derive(Serialize)]
pub struct CanonicalArchiveV1<'c> {
    project_id: &'c str,
    reason: &'c str,
}

/// What the write makes, frozen as every replay's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectArchive {
    /// The archive's own id: what the operation record keeps.
    pub id: Uuid,
    /// The project archived.
    pub project_id: String,
    /// Why.
    pub reason: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub archived_at: OffsetDateTime,
}

/// Archives a project: a write on something of the tenant's that is not a
/// ticket.
pub struct ArchiveProject;

impl RetrySafeWrite for ArchiveProject {
    const ACTION: Action = Action::ArchiveProject;
    type Request = ArchiveDraft;
    type Result = ProjectArchive;
}

impl WriteAction for ArchiveProject {
    type Command = ArchiveCommand;
    type Canonical<'c> = CanonicalArchiveV1<'c>;

    /// No provider keeps projects: the remote backend refuses it.
    fn reach<R: Reach<Self>>(at: R) -> R::Out {
        at.here_only()
    }

    fn validate(draft: &ArchiveDraft) -> Result<ArchiveCommand, Vec<FieldViolation>> {
        let project_id = match &draft.project_id {
            None => Err(FieldViolation::new(
                "project_id",
                "required",
                "project_id is required",
            )),
            Some(raw) => ProjectId::parse(raw.as_str()),
        };
        let reason = draft.reason.clone().unwrap_or_default();
        match project_id {
            Ok(project_id) => Ok(ArchiveCommand { project_id, reason }),
            Err(violation) => Err(vec![violation]),
        }
    }

    fn canonical(command: &ArchiveCommand) -> CanonicalArchiveV1<'_> {
        CanonicalArchiveV1 {
            project_id: command.project_id.as_str(),
            reason: &command.reason,
        }
    }

    async fn apply(
        command: &ArchiveCommand,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<ProjectArchive>, Refusal>, KitchenError> {
        let archive = ProjectArchive {
            id: Uuid::now_v7(),
            project_id: command.project_id.as_str().to_owned(),
            reason: command.reason.clone(),
            archived_at: write.now,
        };
        insert(tx, write.tenant(), &archive).await?;
        // Not a ticket: the record names only the archive's id.
        Ok(Ok(Applied {
            ticket: None,
            result: archive,
        }))
    }
}

impl WriteResult for ProjectArchive {
    fn resource_id(&self) -> Uuid {
        self.id
    }

    async fn current(
        db: &Db,
        record: &OperationRecord,
        resource: Uuid,
    ) -> Result<Option<Self>, KitchenError> {
        find(db, record.tenant_id, resource).await
    }
}
// guide: end

// In a real action these two live in `store/project_archives.rs`, beside
// its migration; here the test makes the table.
const INSERT: &str = "INSERT INTO project_archives (id, tenant_id, project_id, reason, archived_at) \
     VALUES ($1, $2, $3, $4, $5)";
const SELECT: &str = "SELECT id, project_id, reason, archived_at FROM project_archives \
     WHERE tenant_id = $1 AND id = $2";

async fn insert(
    tx: &mut WriteTx,
    tenant: TenantId,
    archive: &ProjectArchive,
) -> Result<(), KitchenError> {
    on_tx!(tx, conn => sqlx::query(INSERT)
        .bind(archive.id)
        .bind(tenant.as_uuid())
        .bind(&archive.project_id)
        .bind(&archive.reason)
        .bind(archive.archived_at)
        .execute(conn)
        .await
        .map(drop)?);
    Ok(())
}

async fn find(db: &Db, tenant: TenantId, id: Uuid) -> Result<Option<ProjectArchive>, KitchenError> {
    let row: Option<(Uuid, String, String, OffsetDateTime)> = on_db!(db, pool => {
        sqlx::query_as(SELECT)
            .bind(tenant.as_uuid())
            .bind(id)
            .fetch_optional(pool)
            .await?
    });
    Ok(
        row.map(|(id, project_id, reason, archived_at)| ProjectArchive {
            id,
            project_id,
            reason,
            archived_at,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::operation::OperationKey;
    use crate::outcome::Outcome;
    use crate::testing::{TestDatabase, tenant_with_token};

    const TABLE: &str = "CREATE TABLE project_archives (id uuid PRIMARY KEY, \
         tenant_id uuid NOT NULL REFERENCES tenants (id), project_id text NOT NULL, \
         reason text NOT NULL, archived_at timestamptz NOT NULL)";

    fn draft(reason: &str) -> ArchiveDraft {
        ArchiveDraft {
            project_id: Some("ops".into()),
            reason: Some(reason.into()),
        }
    }

    /// The guide's example goes through the one write path like every
    /// action: made once, replayed, conflicting, refused on bad input, and
    /// recorded with no ticket.
    async fn an_effect_that_is_not_a_ticket_is_retry_safe(db: TestDatabase) {
        let kitchen = db.kitchen().await;
        on_db!(&kitchen.db, pool => {
            sqlx::query(TABLE).execute(pool).await.map(drop).expect("the example's table")
        });
        let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
        let key = OperationKey::parse("archive-ops-0001").expect("a key");

        let Outcome::Created(made) = kitchen
            .write::<ArchiveProject>(tenant.id, &key, &draft("done"))
            .await
            .expect("no error")
        else {
            panic!("the first write makes the archive");
        };
        let Outcome::Replayed(again) = kitchen
            .write::<ArchiveProject>(tenant.id, &key, &draft("done"))
            .await
            .expect("no error")
        else {
            panic!("the same request with the same key replays");
        };
        assert_eq!(again.snapshot, made.snapshot, "byte for byte");
        assert!(matches!(
            kitchen
                .write::<ArchiveProject>(tenant.id, &key, &draft("another reason"))
                .await
                .expect("no error"),
            Outcome::Conflict { .. }
        ));
        let bad = ArchiveDraft {
            project_id: None,
            reason: None,
        };
        let other = OperationKey::parse("archive-ops-0002").expect("a key");
        assert!(matches!(
            kitchen
                .write::<ArchiveProject>(tenant.id, &other, &bad)
                .await
                .expect("no error"),
            Outcome::Invalid { .. }
        ));

        let record =
            crate::store::operations::find(&kitchen.db, tenant.id, Action::ArchiveProject, &key)
                .await
                .expect("read")
                .expect("recorded");
        assert_eq!(record.ticket_id, None, "no ticket");
        assert_eq!(
            find(&kitchen.db, tenant.id, made.result.id)
                .await
                .expect("read"),
            Some(made.result),
            "the archive is stored once, as answered"
        );
    }

    /// `docs/adding-an-action.md` shows this example as this file has it,
    /// so the guide cannot drift from code that compiles and runs.
    #[test]
    fn the_guide_shows_this_example_as_it_is() {
        let guide = include_str!("../../../docs/adding-an-action.md");
        let example = include_str!("archive_project.rs")
            .split("// guide: begin\n")
            .nth(1)
            .and_then(|rest| rest.split("// guide: end").next())
            .expect("the example's markers");
        assert!(
            guide.contains(example),
            "docs/adding-an-action.md must quote the example between the markers as it is"
        );
    }

    crate::on_both_databases!(an_effect_that_is_not_a_ticket_is_retry_safe);
}
