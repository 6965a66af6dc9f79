/** The icon of the Sessions panel, its commands and its terminal tabs. */

import { LabIcon } from '@jupyterlab/ui-components';

export const sessionsIcon = new LabIcon({
  name: 'unified-exec-kernel:sessions',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M3 4h18a1 1 0 0 1 1 1v14a1 1 0 0 1-1 1H3a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1zm1 2v12h16V6zm2 2.5L7.4 7l4.5 4.5-4.5 4.5L6 14.6l3.1-3.1zM12 15h6v2h-6z"/>' +
    '</svg>'
});
