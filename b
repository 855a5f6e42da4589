  
0 -> /dev/null
1 -> /tmp/bash_jobs.0/45cc618753ae/stdout
10 -> /dev/null
2 -> /tmp/bash_jobs.0/45cc618753ae/stderr
251 -> pipe:[899805]
