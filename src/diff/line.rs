//! A line of a diff: what it is, its numbers on each side, its text.

#[derive(Debug, Clone, Copy, PartialEq, Eq, derive_visitor::DriveMut)]
pub enum LineKind {
    Context,
    Removed,
    Added,
}

impl LineKind {
    /// The mark that starts the line in a unified diff.
    pub fn sign(self) -> char {
        match self {
            LineKind::Context => ' ',
            LineKind::Removed => '-',
            LineKind::Added => '+',
        }
    }
}

/// One line of a hunk as a diff shows it. Its text `T` is borrowed from the file
/// (`&str`) while tern writes a diff, and owned (`String`) in the views the engine sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine<T = String> {
    pub kind: LineKind,
    /// 1-based line number in the original, for context and removed lines.
    pub old_line: Option<usize>,
    /// 1-based line number in the new content, for context and added lines.
    pub new_line: Option<usize>,
    /// The line without its line ending.
    pub text: T,
    /// The line has no newline (the file's last line).
    pub no_newline: bool,
}

/// Drives a visitor through each field, as `#[derive(DriveMut)]` would: the derive
/// cannot take the text type as a parameter (a borrowed line does not drive), so the
/// owned line, the one an engine event carries, drives by hand. Taken apart without
/// `..`, so that a new field does not compile until it is driven here too.
impl derive_visitor::DriveMut for DiffLine {
    fn drive_mut<V: derive_visitor::VisitorMut>(&mut self, visitor: &mut V) {
        visitor.visit(self, derive_visitor::Event::Enter);
        let DiffLine {
            kind,
            old_line,
            new_line,
            text,
            no_newline,
        } = self;
        kind.drive_mut(visitor);
        old_line.drive_mut(visitor);
        new_line.drive_mut(visitor);
        text.drive_mut(visitor);
        no_newline.drive_mut(visitor);
        visitor.visit(self, derive_visitor::Event::Exit);
    }
}

impl DiffLine<&str> {
    pub fn into_owned(self) -> DiffLine {
        DiffLine {
            kind: self.kind,
            old_line: self.old_line,
            new_line: self.new_line,
            text: self.text.to_string(),
            no_newline: self.no_newline,
        }
    }
}
