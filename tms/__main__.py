from tms.cli import main

raise SystemExit(main())
