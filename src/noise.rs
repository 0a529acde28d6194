//! Files that are noise to a reader of a repository: lockfiles, minified bundles, source
//! maps, binary-like data, known by their names, and generated or minified text known by
//! its long lines. A compressed branch review skips them; the repo map leaves them out.

/// Why a file is noise to a reader: a compressed review leaves it out without looking
/// at its diff, the repo map leaves it out (all but `BinaryLike`, which includes data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    Lockfile,
    Minified,
    SourceMap,
    /// An extension that is binary or bulk data even when git sees text (images, fonts,
    /// archives, compiled objects, CSV dumps, SVG).
    BinaryLike,
}

impl Noise {
    /// Classifies a path by its name alone.
    pub fn of(path: &str) -> Option<Noise> {
        let name = path.rsplit('/').next().unwrap_or(path);
        const LOCKFILES: &[&str] = &[
            "package-lock.json",
            "npm-shrinkwrap.json",
            "pnpm-lock.yaml",
            "go.sum",
            "packages.lock.json",
            "gradle.lockfile",
            "package.resolved",
            "bun.lockb",
        ];
        if ends_with(name, ".lock") || LOCKFILES.iter().any(|l| name.eq_ignore_ascii_case(l)) {
            return Some(Noise::Lockfile);
        }
        if ends_with(name, ".map") {
            return Some(Noise::SourceMap);
        }
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        let stem = name.strip_suffix(ext).unwrap_or(name);
        if ends_with(stem, ".min.") || ends_with(stem, "-min.") {
            return Some(Noise::Minified);
        }
        let binary_like = crate::chars::ascii_lowercase(ext, &mut [0; 8]).is_some_and(|ext| {
            matches!(
                ext,
                "png"
                    | "jpg"
                    | "jpeg"
                    | "gif"
                    | "bmp"
                    | "ico"
                    | "webp"
                    | "tiff"
                    | "psd"
                    | "svg"
                    | "ttf"
                    | "otf"
                    | "woff"
                    | "woff2"
                    | "eot"
                    | "zip"
                    | "gz"
                    | "tgz"
                    | "bz2"
                    | "xz"
                    | "zst"
                    | "7z"
                    | "rar"
                    | "tar"
                    | "jar"
                    | "war"
                    | "class"
                    | "o"
                    | "a"
                    | "so"
                    | "dll"
                    | "dylib"
                    | "exe"
                    | "bin"
                    | "wasm"
                    | "pyc"
                    | "pyo"
                    | "pyd"
                    | "pdf"
                    | "mp3"
                    | "mp4"
                    | "ogg"
                    | "wav"
                    | "webm"
                    | "mov"
                    | "avi"
                    | "db"
                    | "sqlite"
                    | "pickle"
                    | "pkl"
                    | "npy"
                    | "npz"
                    | "parquet"
                    | "csv"
                    | "tsv"
            )
        });
        binary_like.then_some(Noise::BinaryLike)
    }

    pub fn label(self) -> &'static str {
        match self {
            Noise::Lockfile => "lockfile",
            Noise::Minified => "minified",
            Noise::SourceMap => "source map",
            Noise::BinaryLike => "binary-like",
        }
    }
}

/// Whether `name` ends with `suffix`, ignoring ASCII case (names are classified for
/// every file of a repository on each refresh: no lower-cased copy).
fn ends_with(name: &str, suffix: &str) -> bool {
    let name = name.as_bytes();
    name.len()
        .checked_sub(suffix.len())
        .and_then(|at| name.get(at..))
        .is_some_and(|tail| tail.eq_ignore_ascii_case(suffix.as_bytes()))
}

/// Lines this long are not written by hand.
const LONG_LINE_BYTES: usize = 1000;

/// Whether `text` is minified or generated data rather than source a person reads: lines
/// over 1,000 bytes hold at least half of it (a minified bundle, a one-line JSON dump; a
/// source file with one long string is not).
pub fn has_long_lines(text: &[u8]) -> bool {
    let long: usize = text
        .split(|&b| b == b'\n')
        .map(<[u8]>::len)
        .filter(|&n| n > LONG_LINE_BYTES)
        .sum();
    long > 0 && long * 2 >= text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_recognised_by_name() {
        for (path, noise) in [
            ("Cargo.lock", Noise::Lockfile),
            ("web/package-lock.json", Noise::Lockfile),
            ("go.sum", Noise::Lockfile),
            ("uv.lock", Noise::Lockfile),
            ("dist/app.min.js", Noise::Minified),
            ("dist/app.js.map", Noise::SourceMap),
            ("assets/logo.PNG", Noise::BinaryLike),
            ("Gemfile.LOCK", Noise::Lockfile),
            ("web/Package-Lock.json", Noise::Lockfile),
            ("dist/App.MIN.js", Noise::Minified),
        ] {
            assert_eq!(Noise::of(path), Some(noise), "{path}");
        }
        for path in ["src/lock.rs", "minify.js", "src/map.rs", "docs/min.md"] {
            assert_eq!(Noise::of(path), None, "{path}");
        }
    }

    #[test]
    fn long_lines_make_text_minified_only_when_they_are_most_of_it() {
        let bundle = format!("!function(e){{{}}}();\n", "var a=1;".repeat(400));
        assert!(has_long_lines(bundle.as_bytes()));
        let json = format!("[{}]", "1,".repeat(2000));
        assert!(has_long_lines(json.as_bytes()));
        let source = format!(
            "{}const BLOB: &str = \"{}\";\n",
            "fn short_line() {}\n".repeat(200),
            "x".repeat(1500)
        );
        assert!(!has_long_lines(source.as_bytes()));
        assert!(!has_long_lines(b""));
        assert!(!has_long_lines("ordinary\r\ntext\r\n".as_bytes()));
    }
}
