//! `on_tool_call` replaces a call's name or arguments (SPEC P2.7); `on_tool_result` replaces a
//! result's text, and its images on image-capable turns (SPEC P2.8, P3.2).

use super::Applied;
use crate::model::HeldImages;
use crate::note::{Note, Refusal};
use crate::tool::{ApprovalState, ToolCall, ToolResult};

/// The facts the `on_tool_result` rule needs (SPEC P2.8, P3.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolResultContext {
    /// Whether this turn returns images; false on text-only turns.
    pub images_allowed: bool,
    /// The images the session holds; a result may only name these.
    pub held: HeldImages,
}

/// Admits an `on_tool_call` replacement. The provider in the replacement is not used: the host
/// resolves it again from the (possibly new) name, then classifies and approves the call again
/// (SPEC P3.1).
///
/// # Errors
/// [`Refusal::ChangedCallId`] or [`Refusal::EmptyToolName`].
pub fn on_tool_call(before: &ToolCall, proposed: ToolCall) -> Result<ToolCall, Refusal> {
    if proposed.call_id != before.call_id {
        return Err(Refusal::ChangedCallId);
    }
    if proposed.name.trim().is_empty() {
        return Err(Refusal::EmptyToolName);
    }
    Ok(ToolCall {
        provider: before.provider,
        ..proposed
    })
}

/// Admits an `on_tool_result` replacement.
///
/// On a text-only turn, changed images are put back as they were and the replacement's text still
/// applies, with the host note [`Note::PluginImagesIgnored`] (SPEC P3.2).
///
/// # Errors
/// A refusal when the call id, name, success flag or approval changed, or when an image the
/// session does not hold is named.
pub fn on_tool_result(
    cx: &ToolResultContext,
    before: &ToolResult,
    mut proposed: ToolResult,
) -> Result<Applied<ToolResult>, Refusal> {
    if proposed.call_id != before.call_id {
        return Err(Refusal::ChangedResultCallId);
    }
    if proposed.name != before.name {
        return Err(Refusal::ChangedResultName);
    }
    if proposed.success != before.success {
        return Err(Refusal::ChangedResultSuccess);
    }
    match (before.approval, proposed.approval) {
        (a, b) if a == b => {}
        (ApprovalState::Denied, ApprovalState::Granted) => {
            return Err(Refusal::MarkedApprovalPassed)
        }
        _ => return Err(Refusal::ChangedApproval),
    }
    if proposed.images == before.images {
        return Ok(Applied::plain(proposed));
    }
    if !cx.images_allowed {
        proposed.images.clone_from(&before.images);
        return Ok(Applied {
            value: proposed,
            notice: Some(Note::PluginImagesIgnored),
        });
    }
    if !proposed.images.iter().all(|image| cx.held.holds(image)) {
        return Err(Refusal::AddedImage);
    }
    Ok(Applied::plain(proposed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HeldImages, ImageRef, MediaType};
    use crate::tool::ToolProvider;
    use serde_json::json;

    fn call() -> ToolCall {
        ToolCall {
            call_id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a.txt"}),
            provider: ToolProvider::BuiltIn,
        }
    }

    fn result() -> ToolResult {
        ToolResult {
            call_id: "c1".into(),
            name: "read_file".into(),
            text: "hello".into(),
            images: vec![],
            success: true,
            approval: ApprovalState::Granted,
        }
    }

    const PNG: ImageRef = ImageRef {
        number: 1,
        media_type: MediaType::Png,
    };

    #[test]
    fn name_and_arguments_may_change_but_not_the_call_id() {
        let mut renamed = call();
        renamed.name = "list_dir".into();
        renamed.arguments = json!({"path": "."});
        assert_eq!(on_tool_call(&call(), renamed.clone()), Ok(renamed));
        let mut new_id = call();
        new_id.call_id = "c2".into();
        assert_eq!(on_tool_call(&call(), new_id), Err(Refusal::ChangedCallId));
    }

    #[test]
    fn text_only_turns_ignore_images_but_keep_the_new_text() {
        let cx = ToolResultContext {
            images_allowed: false,
            held: [PNG].into_iter().collect(),
        };
        let mut proposed = result();
        proposed.text = "HELLO".into();
        proposed.images = vec![PNG];
        let applied = on_tool_result(&cx, &result(), proposed);
        let applied = applied.unwrap_or_else(|r| panic!("refused: {r}"));
        assert_eq!(applied.value.text, "HELLO");
        assert!(applied.value.images.is_empty());
        assert_eq!(applied.notice, Some(Note::PluginImagesIgnored));
    }

    #[test]
    fn image_turns_take_held_images_and_refuse_others() {
        let cx = ToolResultContext {
            images_allowed: true,
            held: HeldImages::default(),
        };
        let mut proposed = result();
        proposed.images = vec![PNG];
        assert_eq!(
            on_tool_result(&cx, &result(), proposed.clone()),
            Err(Refusal::AddedImage)
        );
        let cx = ToolResultContext {
            images_allowed: true,
            held: [PNG].into_iter().collect(),
        };
        assert_eq!(
            on_tool_result(&cx, &result(), proposed.clone()),
            Ok(Applied::plain(proposed))
        );
    }

    #[test]
    fn a_denied_call_cannot_be_marked_passed() {
        let mut denied = result();
        denied.approval = ApprovalState::Denied;
        denied.success = false;
        let mut passed = denied.clone();
        passed.approval = ApprovalState::Granted;
        let cx = ToolResultContext::default();
        assert_eq!(
            on_tool_result(&cx, &denied, passed),
            Err(Refusal::MarkedApprovalPassed)
        );
    }
}
