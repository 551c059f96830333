#!/bin/bash
# Reproduces: "undefined symbol" when a program or a Python extension is loaded against a
# shared library that lacks a symbol it was built against (ABI drift, e.g. a torch extension
# built for another torch version): loader error, ImportError of an extension, ctypes OSError.
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cd "$d"
printf 'namespace c10 { int warn_v1(int x){return x;} }\nextern "C" int base_ok(void){return 0;}\n' > libbase.cpp
g++ -shared -fPIC -o libbase.so libbase.cpp
printf 'namespace c10 { int warn_v1(int x); }\nint main(){return c10::warn_v1(0);}\n' > app.cpp
g++ -o app app.cpp -L. -lbase -Wl,-rpath,'$ORIGIN'
printf '#include <Python.h>\nnamespace c10 { int warn_v1(int x); }\nstatic struct PyModuleDef m={PyModuleDef_HEAD_INIT,"fused_ext",0,-1,0};\nPyMODINIT_FUNC PyInit_fused_ext(void){c10::warn_v1(0);return PyModule_Create(&m);}\n' > ext.cpp
INC=$($PY -c 'import sysconfig;print(sysconfig.get_paths()["include"])')
g++ -shared -fPIC -I"$INC" -o fused_ext.cpython-311-x86_64-linux-gnu.so ext.cpp -L. -lbase -Wl,-rpath,'$ORIGIN'
# the library is rebuilt without the symbol (new version, changed ABI)
printf 'namespace c10 { int warn_v2(long x){return (int)x;} }\nextern "C" int base_ok(void){return 0;}\n' > libbase.cpp
g++ -shared -fPIC -o libbase.so libbase.cpp
./app; echo "exit code: $?"
$PY -c "import fused_ext"; echo "exit code: $?"
$PY -c "import ctypes; ctypes.CDLL('./fused_ext.cpython-311-x86_64-linux-gnu.so')"; echo "exit code: $?"
