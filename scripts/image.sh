#!/usr/bin/env bash
# Builds the gpu-exporter container image from the repository's Dockerfile with buildah
# (docs/container-image.md). The Dockerfile is the one users get; only its base images can be
# swapped, through the BUILDER_IMAGE and RUNTIME_IMAGE build arguments.
#
#   bash scripts/image.sh                 # public bases (rust:<version>-bookworm, distroless cc)
#   bash scripts/image.sh --local-bases   # no registry needed: bootstraps Debian 12 stand-ins
#   bash scripts/image.sh --local-bases --test   # ...then runs and checks it (what .ci/run does)
#   bash scripts/image.sh --local-bases --test --write-facts   # ...and records the measured
#                                         # facts in docs/container-image.md
#   bash scripts/image.sh --local-bases --dcgm --test   # ...and the DCGM variant, <tag>-dcgm
#
# --local-bases builds two local images first, each only once per container storage
# (--rebuild-bases forces it):
#   localhost/gpu-exporter-ci/distroless-cc:debian12  the runtime stand-in: the files of Debian
#       12's libc6, libgcc-s1, base-files, netbase, tzdata and ca-certificates (downloaded by
#       mmdebstrap, unpacked with dpkg-deb, no maintainer script run), a CA bundle, and the
#       users root, nonroot (65532) and nobody, as gcr.io/distroless/cc-debian12 has them. No
#       shell, no package manager.
#   localhost/gpu-exporter-ci/rust:bookworm  the builder stand-in: a Debian 12 minbase root
#       with gcc and libc6-dev (mmdebstrap) and this machine's Rust toolchain (cargo, rustc and
#       the x86_64 standard library) copied under /usr/local/rust; it must be at least the
#       Dockerfile's RUST_VERSION. It trusts this machine's CA bundle (for cargo's downloads).
#
# --dcgm also builds the DCGM variant (the Dockerfile's `dcgm` target: the default image plus
# libdcgm.so.4) as <tag>-dcgm, after the default image and with the same build arguments, so
# its builder and runtime stages come from the layer cache. Its DCGM_IMAGE is --dcgm-image
# NAME (default: the Dockerfile's, NVIDIA's DCGM image); with --local-bases it is
#   localhost/gpu-exporter-ci/dcgm:4  a stand-in built from scratch on every run (it is one
#       file): target/debug/libdcgm_sim.so, the simulated DCGM client library, at
#       /usr/lib/x86_64-linux-gnu/libdcgm.so.4 (cargo build --workspace first).
# With --test, tests/image/check-dcgm.sh then checks the variant against the default image.
#
# Options: --tag NAME (default localhost/gpu-exporter:dev), --mirror URL (Debian mirror for
# mmdebstrap), --rebuild-bases, --dcgm, --dcgm-image NAME, --test, --write-facts. Needs root
# (buildah's storage), buildah and, with --local-bases, mmdebstrap; scripts/test.sh installs
# both from Debian.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=localhost/gpu-exporter:dev
local_bases=
rebuild=
run_test=
write_facts=
dcgm=
dcgm_image=
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift 2 ;;
    --local-bases) local_bases=1; shift ;;
    --rebuild-bases) rebuild=1; shift ;;
    --test) run_test=1; shift ;;
    --write-facts) write_facts=1; shift ;;
    --dcgm) dcgm=1; shift ;;
    --dcgm-image) dcgm_image=${2:?--dcgm-image needs a name}; shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "scripts/image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$write_facts" ] && [ -z "$run_test" ]; then
  echo "scripts/image.sh: --write-facts needs --test (the facts are read off the image it runs)" >&2
  exit 2
fi
command -v buildah >/dev/null || { echo "scripts/image.sh: buildah is not installed (apt-get install buildah)" >&2; exit 1; }

runtime_stand_in=localhost/gpu-exporter-ci/distroless-cc:debian12
builder_stand_in=localhost/gpu-exporter-ci/rust:bookworm
dcgm_stand_in=localhost/gpu-exporter-ci/dcgm:4
work=$(mktemp -d /tmp/gpu-exporter-image.XXXXXX)
containers=()
cleanup() {
  for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }
new_container() { # prints the container's name; removed on exit
  local c
  c=$(buildah from --pull=never "$1")
  containers+=("$c")
  printf '%s\n' "$c"
}
dockerfile_arg() { sed -n "s/^ARG $1=//p" Dockerfile | head -n1; }

build_runtime_stand_in() {
  echo "==> bootstrapping $runtime_stand_in (Debian 12 stand-in for distroless cc) with mmdebstrap"
  local root=$work/runtime-root pkgs="libc6 libgcc-s1 base-files netbase tzdata ca-certificates"
  mkdir -p "$root"
  # extract: apt downloads the packages (and their dependencies); the hook unpacks only the
  # ones named, as distroless does, so debconf, perl and the shells they need stay out.
  mmdebstrap --quiet --variant=extract --include="${pkgs// /,}" \
    --extract-hook="for p in $pkgs; do dpkg-deb --extract \"\$1\"/var/cache/apt/archives/\${p}_*.deb '$root' || exit 1; done" \
    bookworm "$work/discard.tar" "$mirror"
  # What ca-certificates' maintainer script would have generated: the bundle of every CA.
  mkdir -p "$root/etc/ssl/certs"
  cat "$root"/usr/share/ca-certificates/*/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"
  cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$root/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
  mkdir -p "$root/home/nonroot" "$root/tmp"
  chown 65532:65532 "$root/home/nonroot"
  chmod 1777 "$root/tmp"
  # Documentation, and the packages' shell scripts (nothing could run them without a shell):
  # distroless has neither.
  rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/lintian" \
    "$root/etc/update-motd.d" "$root/usr/sbin/update-ca-certificates" "$root/etc/ca-certificates" \
    "$root/usr/share/ca-certificates" "$root/etc/profile.d" "$root/etc/skel"
  local c
  c=$(buildah from scratch); containers+=("$c")
  tar -C "$root" -cf "$work/runtime.tar" .
  buildah add --quiet "$c" "$work/runtime.tar" / >/dev/null
  buildah config --user 65532:65532 --workingdir /home/nonroot \
    --created-by "scripts/image.sh: Debian 12 files of $pkgs (mmdebstrap, dpkg-deb --extract)" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt "$c"
  buildah commit --quiet --rm "$c" "$runtime_stand_in" >/dev/null
}

build_builder_stand_in() {
  echo "==> bootstrapping $builder_stand_in (Debian 12 + this machine's Rust) with mmdebstrap"
  local sysroot need have
  sysroot=$(rustc --print sysroot)
  need=$(dockerfile_arg RUST_VERSION)
  have=$(rustc --version | awk '{print $2}')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
    echo "scripts/image.sh: this machine's Rust $have is older than the Dockerfile's RUST_VERSION $need" >&2
    exit 1
  fi
  mmdebstrap --quiet --variant=minbase --include=gcc,libc6-dev,ca-certificates \
    bookworm "$work/builder.tar" "$mirror"
  # cargo, rustc, their shared libraries and the host standard library; no docs, no sources.
  local parts=(bin/cargo bin/rustc lib/rustlib/x86_64-unknown-linux-gnu)
  parts+=($(cd "$sysroot" && ls -d lib/*.so* lib/rustlib/etc 2>/dev/null))
  tar -C "$sysroot" -cf "$work/rust.tar" --transform 's,^,usr/local/rust/,' "${parts[@]}"
  local c
  c=$(buildah from scratch); containers+=("$c")
  buildah add --quiet "$c" "$work/builder.tar" / >/dev/null
  buildah add --quiet "$c" "$work/rust.tar" / >/dev/null
  # This machine's CA bundle, so that cargo in the build trusts what the machine trusts (a
  # TLS-inspecting proxy in front of crates.io, as CI sandboxes have).
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    buildah copy --quiet "$c" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
  fi
  buildah config --created-by "scripts/image.sh: Debian 12 minbase, gcc, libc6-dev (mmdebstrap) + Rust $have" \
    --env PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env CARGO_HOME=/usr/local/cargo --env RUST_VERSION="$have" "$c"
  buildah commit --quiet --rm "$c" "$builder_stand_in" >/dev/null
}

build_dcgm_stand_in() {
  local lib=target/debug/libdcgm_sim.so old c
  [ -f "$lib" ] || { echo "scripts/image.sh: $lib is missing (cargo build --workspace)" >&2; exit 1; }
  echo "==> $dcgm_stand_in (stand-in for NVIDIA's DCGM image): $lib as libdcgm.so.4"
  old=$(buildah inspect --type image --format '{{.FromImageID}}' "$dcgm_stand_in" 2>/dev/null || true)
  local new
  c=$(buildah from scratch); containers+=("$c")
  buildah copy --quiet --chmod 0644 "$c" "$lib" /usr/lib/x86_64-linux-gnu/libdcgm.so.4 >/dev/null
  buildah config --created-by "scripts/image.sh: $lib as libdcgm.so.4 (sha256 $(sha256sum "$lib" | cut -c1-64))" "$c"
  new=$(buildah commit --quiet --rm "$c" "$dcgm_stand_in")
  # The previous stand-in, now untagged, is not needed.
  if [ -n "$old" ] && [ "$old" != "$new" ]; then buildah rmi "$old" >/dev/null 2>&1 || true; fi
}

pull=()
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# The revision goes in as a build argument (what `docker build` users pass) and again as
# --label: buildah 1.28's layer cache ignores a changed build argument, so with --layers alone
# a new commit's image reused the LABEL step of the last build and named the old commit.
build_args=(--build-arg "REVISION=$revision" --label "org.opencontainers.image.revision=$revision")
if [ -n "$local_bases" ]; then
  command -v mmdebstrap >/dev/null || { echo "scripts/image.sh: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 1; }
  if [ -n "$rebuild" ] || ! have_image "$runtime_stand_in"; then build_runtime_stand_in; fi
  if [ -n "$rebuild" ] || ! have_image "$builder_stand_in"; then build_builder_stand_in; fi
  pull=(--pull=never)
  build_args+=(--build-arg "BUILDER_IMAGE=$builder_stand_in" --build-arg "RUNTIME_IMAGE=$runtime_stand_in")
fi

# --layers keeps an image per Dockerfile step, so that the next build reuses them; each build
# whose sources changed adds new ones. $work/steps collects the IDs of the step images this
# run's builds made or reused (buildah prints "--> ID" or "--> Using cache ID" after each
# step), and prune_earlier_builds below removes the other, untagged step images of this
# Dockerfile: on a machine that keeps its container storage (a developer's, a CI runner's)
# they would otherwise pile up with every commit.
build() { # build TAG [BUILDAH ARGS...]: the Dockerfile, with the build arguments above
  local t=$1 start rc; shift
  echo "==> buildah build -t $t $* ${build_args[*]} ."
  start=$(date +%s)
  set +e
  # --force-rm: a failed step's working container (its whole file system) is removed too.
  buildah build --isolation chroot --layers --force-rm "${pull[@]}" -t "$t" "$@" "${build_args[@]}" . 2>&1 \
    | tee -a "$work/build.log" \
    | grep --line-buffered -v '^ *\(Compiling\|Downloaded\|Downloading\) '
  rc=${PIPESTATUS[0]}
  set -e
  sed -n 's/^--> \(Using cache \)\{0,1\}\([0-9a-f]\{11,64\}\)$/\2/p' "$work/build.log" >> "$work/steps"
  : > "$work/build.log"
  if [ "$rc" != 0 ]; then echo "scripts/image.sh: buildah build of $t failed (exit $rc)" >&2; exit 1; fi
  echo "==> built $t in $(( $(date +%s) - start )) s"
}

# An untagged image is a step of this Dockerfile when its history has the builder stage's ENV
# step or the runtime stage's title label; it is kept when this run's builds made or reused it.
prune_earlier_builds() {
  local id history n=0 kept
  for id in $(buildah images --all --no-trunc --noheading --filter dangling=true --format '{{.ID}}'); do
    id=${id#sha256:}
    kept=
    while read -r step; do
      case "$id" in "$step"*) kept=1; break ;; esac
    done < "$work/steps"
    [ -n "$kept" ] && continue
    history=$(buildah inspect --type image --format '{{range .OCIv1.History}}{{.CreatedBy}}{{"\n"}}{{end}}' "$id" 2>/dev/null) || continue
    if grep -q -e 'CARGO_PROFILE_RELEASE_STRIP=' -e 'org.opencontainers.image.title="gpu-exporter"' <<< "$history"; then
      buildah rmi "$id" >/dev/null 2>&1 && n=$((n + 1))
    fi
  done
  echo "==> removed $n step images of earlier builds of this Dockerfile; container storage: $(du -sh "$(buildah info --format '{{.store.GraphRoot}}')" 2>/dev/null | cut -f1)"
}

: > "$work/steps"
build "$tag"

if [ -n "$dcgm" ]; then
  dcgm_args=()
  if [ -n "$local_bases" ] && [ -z "$dcgm_image" ]; then
    build_dcgm_stand_in
    dcgm_image=$dcgm_stand_in
  fi
  [ -n "$dcgm_image" ] && dcgm_args=(--build-arg "DCGM_IMAGE=$dcgm_image")
  # (--force-rm, in build: without it buildah 1.28 also leaves the dcgm-libs stage's working
  # container.)
  build "$tag-dcgm" --target dcgm "${dcgm_args[@]}"
fi
prune_earlier_builds

if [ -n "$run_test" ]; then
  facts_args=()
  [ -n "$write_facts" ] && facts_args=(--write-facts docs/container-image.md)
  EXPECT_REVISION=$revision bash tests/image/check.sh "$tag" "${facts_args[@]}"
  if [ -n "$dcgm" ]; then bash tests/image/check-dcgm.sh "$tag-dcgm" "$tag" "${facts_args[@]}"; fi
fi
