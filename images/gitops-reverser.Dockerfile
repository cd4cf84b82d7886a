# gitops-reverser: the image `npm run images` builds without a daemon, for Docker or Buildah.
# From the repository's root: docker build -f images/gitops-reverser.Dockerfile .
# packages/images/test/dockerfile-parity.test.ts checks it against the recipe (packages/images/src).

# The pinned Node (devDependencies.node) and every workspace's production dependencies,
# installed from the manifests alone, as the recipe's dependencies layer.
FROM docker.io/library/node:24.21.0-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json /app/
COPY operators/exoledge/package.json /app/operators/exoledge/package.json
COPY operators/gitops-reverser/package.json /app/operators/gitops-reverser/package.json
COPY operators/permissions/package.json /app/operators/permissions/package.json
COPY operators/terdut/package.json /app/operators/terdut/package.json
COPY operators/weebo-link/package.json /app/operators/weebo-link/package.json
COPY packages/cel/package.json /app/packages/cel/package.json
COPY packages/controlplane/package.json /app/packages/controlplane/package.json
COPY packages/images/package.json /app/packages/images/package.json
COPY packages/kit/package.json /app/packages/kit/package.json
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
# git and ssh, which the operator runs as processes, with the libraries they link: fetched
# and extracted as the recipe's extra layer does (dpkg-deb -x, no maintainer scripts; the
# list names every library, apt-get download resolves none). Distroless has no apt.
RUN apt-get update \
  && mkdir -p /tmp/debs /extra && cd /tmp/debs \
  && apt-get download git \
     openssh-client \
     libcurl3-gnutls \
     libexpat1 \
     libpcre2-8-0 \
     zlib1g \
     libbrotli1 \
     libcom-err2 \
     libgnutls30 \
     libgssapi-krb5-2 \
     libhogweed6 \
     libidn2-0 \
     libk5crypto3 \
     libkeyutils1 \
     libkrb5-3 \
     libkrb5support0 \
     libldap-2.5-0 \
     libnettle8 \
     libnghttp2-14 \
     libp11-kit0 \
     libpsl5 \
     librtmp1 \
     libsasl2-2 \
     libsasl2-modules-db \
     libssh2-1 \
     libssl3 \
     libtasn1-6 \
     libunistring2 \
     libzstd1 \
     libgmp10 \
     libffi8 \
     libcrypt1 \
     libdb5.3 \
     libedit2 \
     libfido2-1 \
     libselinux1 \
     libbsd0 \
     libmd0 \
     libcbor0.8 \
     libtinfo6 \
     libudev1 \
  && for deb in *.deb; do dpkg-deb -x "$deb" /extra; done \
  && rm -rf /extra/usr/share/doc /extra/usr/share/man /extra/usr/share/locale /var/lib/apt/lists/*

# Distroless cc: glibc, libgcc and libstdc++ (what node links against) and the nonroot
# user 65532, as the recipe's base; Debian 12 like the stage above.
FROM gcr.io/distroless/cc-debian12:nonroot
# The extracted git, ssh and libraries first, as the recipe's layers are ordered.
COPY --from=deps /extra /
COPY --from=deps /usr/local/bin/node /usr/local/bin/node
COPY --from=deps /app /app
# The workspaces' sources at their own paths: type stripping refuses files under node_modules.
COPY operators/gitops-reverser/src /app/operators/gitops-reverser/src
COPY packages/kit/src /app/packages/kit/src
USER 65532:65532
WORKDIR /app
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    NODE_ENV=production
LABEL org.opencontainers.image.title="gitops-reverser" \
      org.opencontainers.image.description="gitops-reverser: live objects mirrored into Git" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/usr/local/bin/node", "/app/operators/gitops-reverser/src/main.ts"]
