import sys

from lab.run import main

sys.exit(main())
