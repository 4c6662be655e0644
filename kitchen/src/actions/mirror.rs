//! The local copy of a change a provider made to a ticket (an update or a
//! move), shared by `update_ticket` and `transition_ticket`.
//!
//! Why the provider's word and not our own `apply`: on the remote backend
//! the provider is the system of record, and its changes reach us in an
//! order we do not choose (a change reconciled late may be older than one
//! settled since). So the local copy takes the ticket as the provider
//! reports it after the change, only ever forwards (a higher version
//! replaces a lower one, never the reverse), and the history records the
//! change as the provider's changelog has it, at the version it made.

use crate::KitchenError;
use crate::domain::ticket::{Ticket, TicketId};
use crate::provider::{EffectKind, ProviderEffect};
use crate::store::{self, write::WriteTx};
use crate::write::wrong_kind;
use crate::write::{Applied, WriteContext};

/// Copies the change `receipt` reports for local ticket `ticket_id`, and
/// answers the ticket as that change left it.
pub(crate) async fn mirror_change(
    ticket_id: TicketId,
    receipt: &ProviderEffect,
    tx: &mut WriteTx,
    write: &WriteContext,
) -> Result<Result<Applied<Ticket>, String>, KitchenError> {
    let ProviderEffect::Change {
        id,
        changes,
        ticket: state,
    } = receipt
    else {
        return Ok(Err(wrong_kind(EffectKind::Change, receipt)));
    };
    let Some(local) = store::tickets::lock(tx, write.tenant(), ticket_id).await? else {
        return Err(KitchenError::CorruptRecord(format!(
            "ticket {ticket_id} vanished while a change to it was being settled"
        )));
    };
    if local.provider_ticket_id.as_deref() != Some(state.id.as_str()) {
        return Ok(Err(format!(
            "the provider's change {id} is to its ticket {}, not to {}",
            state.id,
            local.provider_ticket_id.as_deref().unwrap_or("(none)")
        )));
    }
    let after = Ticket {
        title: state.title.clone(),
        description: state.description.clone(),
        priority: state.priority,
        status: state.status,
        assignee: state.assignee.clone(),
        version: state.version,
        updated_at: if changes.is_empty() {
            local.updated_at
        } else {
            Some(write.now)
        },
        ..local.clone()
    };
    if after.version > local.version {
        store::tickets::save(tx, write.tenant(), &local, &after).await?;
    }
    if !changes.is_empty() {
        let entry = write.history(ticket_id, changes.clone(), state.version);
        store::history::append(tx, write.tenant(), &entry).await?;
    }
    Ok(Ok(Applied {
        ticket: Some(ticket_id),
        result: after,
    }))
}
