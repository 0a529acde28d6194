//! What a diff did to a file.

use serde::Serialize;

/// How a file changed. A rename (with or without edits) is `Renamed`; lists of files left
/// out of a review count it as modified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
}

impl FileStatus {
    /// As the engine's `--json` events have always named it: an added file is
    /// `"created"`.
    pub fn serialize_as_change<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FileStatus::Added => s.serialize_str("created"),
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposals_added_file_is_created_in_its_events_and_added_elsewhere() {
        #[derive(Serialize)]
        struct View {
            #[serde(serialize_with = "FileStatus::serialize_as_change")]
            change: FileStatus,
            status: FileStatus,
        }
        let json = |s| {
            serde_json::to_string(&View {
                change: s,
                status: s,
            })
            .unwrap()
        };
        assert_eq!(
            json(FileStatus::Added),
            r#"{"change":"created","status":"added"}"#
        );
        assert_eq!(
            json(FileStatus::Modified),
            r#"{"change":"modified","status":"modified"}"#
        );
    }
}
