//! A page that could not be made: the one error every page answers with.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use kitchen::KitchenError;
use maud::html;

use crate::layout::{Here, page as frame};

/// A page that could not be made: logged with its cause, answered with a
/// short page (the database, most likely, is down).
pub(crate) struct Failed(KitchenError);

impl From<KitchenError> for Failed {
    fn from(e: KitchenError) -> Self {
        Self(e)
    }
}

impl IntoResponse for Failed {
    fn into_response(self) -> Response {
        tracing::error!(error = %kitchen::error_chain(&self.0), "a console page failed");
        let body = html! {
            div.note.bad {
                "The page could not be made: " (self.0)
                ". The server log has the details; reload to try again."
            }
        };
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            frame("Error", Here::Overview, body),
        )
            .into_response()
    }
}
