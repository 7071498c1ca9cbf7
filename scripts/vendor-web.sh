#!/usr/bin/env bash
# Fetches the front's third-party files again from npm, as web/app/vendor/vendor.json pins
# them (package, version, the tarball's integrity, the file's sha256), and copies each with its
# license into web/app/vendor/. The front has no build step, so what is served is the package's
# own file, unchanged; pinning the integrity means a registry that served other bytes under the
# same version stops this script instead of changing the door page. Idempotent: run it again
# and nothing changes. To move to a new version, edit vendor.json (version, tarball,
# integrity from `npm view jsqr@X dist.integrity`, sha256 from this script's complaint).
source "$(dirname "$0")/lib.sh"
command -v npm >/dev/null || die "npm is required"
command -v node >/dev/null || die "node is required"

VENDOR="$ROOT/web/app/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One tab-separated line per file of the manifest.
node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  for (const f of m.files) {
    console.log([f.file, f.package, f.version, f.from, f.licenseFrom, f.licenseFile, f.integrity, f.sha256].join("\t"));
  }' "$VENDOR/vendor.json" |
while IFS=$'\t' read -r file package version from license_from license integrity sha256; do
    dir="$work/$package"
    mkdir -p "$dir"
    tarball="$(cd "$dir" && npm pack --silent "$package@$version")"
    got="sha512-$(openssl dgst -sha512 -binary "$dir/$tarball" | base64 -w0)"
    [ "$got" = "$integrity" ] || die "$package@$version: the tarball's integrity is $got, not $integrity"
    tar -xzf "$dir/$tarball" -C "$dir"
    actual="$(sha256sum "$dir/package/$from" | cut -d' ' -f1)"
    [ "$actual" = "$sha256" ] || die "$package@$version: $from has sha256 $actual, not $sha256"
    install -m 0644 "$dir/package/$from" "$VENDOR/$file"
    install -m 0644 "$dir/package/$license_from" "$VENDOR/$license"
    log "$file: $package@$version ($from), sha256 $sha256"
done
