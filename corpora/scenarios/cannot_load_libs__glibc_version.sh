#!/bin/bash
# Reproduces: a binary built against a newer glibc / libstdc++ symbol version than the host has:
# "version `GLIBC_2.99' not found" / "version `GLIBCXX_3.4.99' not found". The version nodes are
# made with linker version scripts on stand-in libraries, so the dynamic loader prints exactly
# what it prints on an old host; also the Python ImportError form of the same failure.
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cd "$d"
printf 'int f(void){return 0;}\n' > v.c
printf 'GLIBC_2.99 { global: f; local: *; };\n' > new.map
printf 'GLIBC_2.17 { global: f; local: *; };\n' > old.map
printf 'GLIBCXX_3.4.99 { global: f; local: *; };\n' > newxx.map
printf 'GLIBCXX_3.4.19 { global: f; local: *; };\n' > oldxx.map
gcc -shared -fPIC -Wl,--version-script=new.map -Wl,-soname,libcfake.so.6 -o libcfake.so.6 v.c
gcc -shared -fPIC -Wl,--version-script=newxx.map -Wl,-soname,libstdcxxfake.so.6 -o libstdcxxfake.so.6 v.c
ln -s libcfake.so.6 libcfake.so; ln -s libstdcxxfake.so.6 libstdcxxfake.so
printf 'int f(void);\nint main(void){return f();}\n' > app.c
gcc -o app app.c -L. -lcfake -Wl,-rpath,'$ORIGIN'
printf '#include <Python.h>\nint f(void);\nstatic struct PyModuleDef m={PyModuleDef_HEAD_INIT,"_ops",0,-1,0};\nPyMODINIT_FUNC PyInit__ops(void){f();return PyModule_Create(&m);}\n' > ext.c
INC=$($PY -c 'import sysconfig;print(sysconfig.get_paths()["include"])')
gcc -shared -fPIC -I"$INC" -o _ops.cpython-311-x86_64-linux-gnu.so ext.c -L. -lstdcxxfake -Wl,-rpath,'$ORIGIN'
# the host has only the older versions
gcc -shared -fPIC -Wl,--version-script=old.map -Wl,-soname,libcfake.so.6 -o libcfake.so.6 v.c
gcc -shared -fPIC -Wl,--version-script=oldxx.map -Wl,-soname,libstdcxxfake.so.6 -o libstdcxxfake.so.6 v.c
./app; echo "exit code: $?"
$PY -c "import _ops"; echo "exit code: $?"
