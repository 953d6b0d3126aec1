#!/bin/sh
# SPDX-License-Identifier: MIT
# Decodes the fixture's OTLP request with protoc, a second protobuf
# implementation, by the upstream type name, and checks the text it prints.
# usage: check_otlp_protoc.sh WRITE_OTLP PROTO_DIR WORKDIR
# (exit 77: protoc is not installed)
set -eu

writer=$1
protos=$2
work=$3

if ! command -v protoc >/dev/null 2>&1; then
	echo "SKIP: protoc is not installed (Debian: protobuf-compiler)"
	exit 77
fi

fail() {
	echo "FAIL: $*"
	exit 1
}

rm -rf "$work"
mkdir -p "$work"
"$writer" "$work/request.bin"
protoc --proto_path="$protos" \
	--decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
	otlp_profiles_service.proto <"$work/request.bin" >"$work/request.txt" ||
	fail "protoc could not decode the request"
cat "$work/request.txt"
txt=$work/request.txt

has() {
	grep -Fq -- "$1" "$txt" || fail "missing: $1"
}
count() {
	n=$(grep -Fc -- "$1" "$txt" || true)
	[ "$n" -eq "$2" ] || fail "expected $2 lines with $1, got $n"
}

# no field protoc does not know (it prints those as bare numbers)
if grep -Eq '^ *[0-9]+: ' "$txt"; then
	fail "unknown fields in the request"
fi
count 'resource_profiles {' 2
count 'dictionary {' 1
# function names and files, in the string table
for s in inner_fn work main memcpy do_syscall_64 '[unknown]' /src/app/inner.h \
	/src/app/work.c /usr/bin/app /lib/libc.so.6 '[kernel.kallsyms]' cpu nanoseconds; do
	has "string_table: \"$s\""
done
# string_table[0] is ""
first=$(grep -m1 'string_table:' "$txt")
[ "$(echo "$first" | sed 's/^ *//')" = 'string_table: ""' ] || fail "string_table[0] is $first"
# resource attributes
for k in host.name service.name process.pid process.executable.path \
	process.executable.name container.id k8s.pod.uid; do
	has "key: \"$k\""
done
has 'string_value: "testhost"'
has 'string_value: "container/4f2c1a9e8b7d"'
has 'int_value: 100'
has 'int_value: 200'
has 'string_value: "8d4a2c1e-1111-2222-3333-444455556666"'
# dictionary attributes: build-id, comm, frame type
has 'string_value: "0123456789abcdef0123456789abcdef01234567"'
has 'string_value: "app-worker"'
has 'string_value: "kernel"'
has 'name: "lowprof"'
has 'time_unix_nano: 1700000000123456789'
echo "PASS"
