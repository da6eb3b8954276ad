# cmake -DMD=docs/getting-started.md -DSRC=docs/examples/getting_started.cpp -P check_doc_example.cmake
# Fails unless the ```cpp block between the BEGIN/END markers of SRC in MD is
# exactly the file SRC (run by CTest as docs_example_in_sync).
file(READ ${MD} md)
file(READ ${SRC} src)
get_filename_component(name ${SRC} NAME)
string(REGEX MATCH "<!-- BEGIN [^\n]*${name}[^\n]*-->\n```cpp\n(.*)```\n<!-- END [^\n]*${name} -->" found "${md}")
if(NOT found)
  message(FATAL_ERROR "${MD}: no ```cpp block between <!-- BEGIN ...${name}... --> and <!-- END ...${name} -->")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL src)
  message(FATAL_ERROR "${MD}: the code block differs from ${SRC}; copy the file into the block")
endif()
message(STATUS "${MD}: the code block equals ${SRC}")
